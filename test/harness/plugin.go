package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVersion is stamped into the binary the harness builds, so tests can tell
// it from any other kubectl-assisted on the machine.
const TestVersion = "v0.0.0-harness"

// BinaryVersion is the version the binary under test reports: the one make
// stamped (KUBECTL_ASSISTED_VERSION) or TestVersion for a harness build.
func BinaryVersion() string {
	if os.Getenv("KUBECTL_ASSISTED_BIN") != "" {
		if v := os.Getenv("KUBECTL_ASSISTED_VERSION"); v != "" {
			return v
		}
	}
	return TestVersion
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// PluginBinary returns the kubectl-assisted binary under test: KUBECTL_ASSISTED_BIN
// when set (make test builds it once), else one built from the repository for
// this test process.
func PluginBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("KUBECTL_ASSISTED_BIN"); p != "" {
			binPath, binErr = filepath.Abs(p)
			return
		}
		dir, err := os.MkdirTemp("", "kat-bin-")
		if err != nil {
			binErr = err
			return
		}
		atExit(func() { _ = os.RemoveAll(dir) })
		binPath = filepath.Join(dir, "kubectl-assisted")
		cmd := exec.Command("go", "build", "-o", binPath,
			"-ldflags", "-X github.com/kubectl-assisted/kubectl-assisted/plugin.version="+TestVersion,
			"./cmd/kubectl-assisted")
		cmd.Dir = RepoRoot()
		// Static, as make build and the releases build it: the restore Job
		// runs this binary in an image without a C library.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("kubectl-assisted binary: %v", binErr)
	}
	return binPath
}

// Plugin runs kubectl-assisted the way users do: `kubectl assisted ...`, found by
// kubectl's plugin discovery on a PATH that holds only the binary under test, the
// harness tools and the system directories; HOME is a fresh directory.
type Plugin struct {
	Kubectl string
	BinDir  string
	Home    string
	// Env is added to every run (KEY=VALUE).
	Env []string
}

// NewPlugin prepares a sandbox for running the plugin through kubectl.
func NewPlugin(t testing.TB) *Plugin {
	t.Helper()
	kubectl, err := Tool("kubectl")
	if err != nil {
		Unavailable(t, "kubectl", err)
	}
	bin := PluginBinary(t)
	p := &Plugin{Kubectl: kubectl, BinDir: t.TempDir(), Home: t.TempDir()}
	if err := os.Symlink(bin, filepath.Join(p.BinDir, "kubectl-assisted")); err != nil {
		t.Fatal(err)
	}
	return p
}

// Result is one finished run.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// Combined is stdout and stderr, for failure messages.
func (r Result) Combined() string { return "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr }

func (p *Plugin) environ() []string {
	path := p.BinDir + string(os.PathListSeparator) + ToolsBin() + string(os.PathListSeparator) + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	env := []string{"PATH=" + path, "HOME=" + p.Home, "LANG=C.UTF-8"}
	for _, k := range []string{"TMPDIR", "CI"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, p.Env...)
}

// Run runs `kubectl assisted args...` with stdin and returns its result; it
// fails t only when the process cannot run at all. ctx bounds its run time.
func (p *Plugin) RunContext(ctx context.Context, t testing.TB, stdin string, args ...string) Result {
	t.Helper()
	cmd := exec.CommandContext(ctx, p.Kubectl, append([]string{"assisted"}, args...)...)
	cmd.Env = p.environ()
	cmd.Dir = p.Home
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errOut.String()}
	if err != nil {
		var ee *exec.ExitError
		if !asExitError(err, &ee) {
			t.Fatalf("kubectl assisted %s: %v", strings.Join(args, " "), err)
		}
		res.ExitCode = ee.ExitCode()
	}
	return res
}

// Run is RunContext with a 10-minute bound and no stdin.
func (p *Plugin) Run(t testing.TB, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return p.RunContext(ctx, t, "", args...)
}

// MustRun is Run that fails t on a non-zero exit code.
func (p *Plugin) MustRun(t testing.TB, args ...string) Result {
	t.Helper()
	r := p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("kubectl assisted %s: exit %d\n%s", strings.Join(args, " "), r.ExitCode, r.Combined())
	}
	return r
}

// Command builds an *exec.Cmd for `kubectl assisted args...` in the sandbox, for
// tests that need to signal or kill the process mid-run.
func (p *Plugin) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.Kubectl, append([]string{"assisted"}, args...)...)
	cmd.Env = p.environ()
	cmd.Dir = p.Home
	return cmd
}

func asExitError(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}
