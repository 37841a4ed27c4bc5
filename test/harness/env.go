package harness

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// InCI reports whether the tests run in CI, where a missing component is a
// failure rather than a skip.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Unavailable skips t because component cannot be used, or fails it in CI.
func Unavailable(t testing.TB, component string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s unavailable: %v (run `make tools` or test/tools/install.sh)", component, err)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RepoRoot is the kubectl-assisted repository root (the parent of test/).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir is ../shared next to the repository: CRDs, fixtures and research.
// KUBECTL_ASSISTED_SHARED overrides it.
func SharedDir() string {
	if d := os.Getenv("KUBECTL_ASSISTED_SHARED"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "..", "shared")
}

// CacheDir is where test/tools/install.sh keeps the tools it builds.
func CacheDir() string {
	if d := os.Getenv("KUBECTL_ASSISTED_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "kubectl-assisted")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kubectl-assisted")
}

// ToolsBin is the directory of Go-built tools (kube-apiserver, etcd, oras, krew,
// ignition-validate).
func ToolsBin() string { return filepath.Join(CacheDir(), "bin") }

// Tool finds a tool in ToolsBin or on PATH.
func Tool(name string) (string, error) {
	p := filepath.Join(ToolsBin(), name)
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, nil
	}
	return exec.LookPath(name)
}

// RequireTool returns the path of a tool or skips/fails t.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := Tool(name)
	if err != nil {
		Unavailable(t, name, err)
	}
	return p
}

var portMu sync.Mutex

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return p
}

func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// SharedTempDir makes a directory that other local users (postgres) can enter;
// t.TempDir is 0700 and owned by the test user.
func SharedTempDir(t testing.TB, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp("", "kat-"+pattern+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}
