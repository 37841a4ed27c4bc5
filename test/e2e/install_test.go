package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestMakeInstall(t *testing.T) {
	prefix, build := t.TempDir(), t.TempDir()
	const version = "v0.0.0-install-e2e"
	// BIN_DIR keeps the shared bin/kubectl-assisted, which other tests run,
	// untouched; the compile is cached from `make build`, so this only links.
	runMake(t, "install", "PREFIX="+prefix, "BIN_DIR="+build, "VERSION="+version)
	installed := filepath.Join(prefix, "bin", "kubectl-assisted")
	fi, err := os.Stat(installed)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("%s mode %v, want 0755", installed, fi.Mode())
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		harness.Unavailable(t, "kubectl", err)
	}
	cmd := exec.Command(kubectl, "assisted", "version", "-o", "json")
	cmd.Env = []string{"PATH=" + filepath.Dir(installed) + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl assisted version after make install: %v\n%s", err, out)
	}
	var v struct{ Version string }
	if err := json.Unmarshal(out, &v); err != nil || v.Version != version {
		t.Fatalf("installed plugin reports %q (%v), want %s", v.Version, err, version)
	}
}
