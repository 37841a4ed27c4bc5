package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestOcFindsThePlugin runs the plugin the way an OpenShift user does, typing
// `oc assisted ...` in bash. oc is not installed here; its plugin handler is
// kubectl's (oc looks for oc-NAME, then kubectl-NAME, and execs it with the
// environment unchanged), so kubectl installed under the name oc stands in for
// it. The plugin learns the caller from "_", which bash sets to the command it
// starts.
func TestOcFindsThePlugin(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		harness.Unavailable(t, "bash", err)
	}
	p := harness.NewPlugin(t)
	ocDir := t.TempDir()
	if err := os.Symlink(p.Kubectl, filepath.Join(ocDir, "oc")); err != nil {
		t.Fatal(err)
	}
	shell := func(line string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bash, "-c", line)
		cmd.Dir = p.Home
		cmd.Env = []string{
			"PATH=" + ocDir + string(os.PathListSeparator) + p.BinDir + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
			"HOME=" + p.Home, "LANG=C.UTF-8",
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bash -c %q: %v", line, err)
		}
		return out.String(), errOut.String(), code
	}

	out, _, code := shell("oc assisted --help")
	if code != 0 || !strings.Contains(out, "oc assisted [command]") || strings.Contains(out, "kubectl assisted") {
		t.Fatalf("oc assisted --help (exit %d) does not name oc throughout:\n%s", code, out)
	}
	out, _, _ = shell("oc assisted version --help")
	if !strings.Contains(out, "oc assisted version -o json") {
		t.Fatalf("oc assisted version --help examples do not name oc:\n%s", out)
	}
	_, errOut, code := shell("oc assisted version -o xml")
	if code != 2 || !strings.Contains(errOut, "See 'oc assisted version --help'") {
		t.Fatalf("oc assisted version -o xml: exit %d, stderr:\n%s", code, errOut)
	}
	// The same binary, called through kubectl in the same shell, says kubectl.
	out, _, code = shell("kubectl assisted --help")
	if code != 0 || !strings.Contains(out, "kubectl assisted [command]") || strings.Contains(out, "oc assisted") {
		t.Fatalf("kubectl assisted --help (exit %d):\n%s", code, out)
	}
}
