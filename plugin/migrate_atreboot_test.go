package plugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
)

var (
	_ Command = (*AtRebootArmedOptions)(nil)
	_ Command = (*AtRebootCaptureOptions)(nil)
	_ Command = (*AtRebootHoldOptions)(nil)
)

// TestMigrateAtRebootUsage: --at-reboot and --disarm refuse what they cannot
// do before any I/O (the kubeconfig named here does not exist).
func TestMigrateAtRebootUsage(t *testing.T) {
	base := []string{"migrate", "--to", "reg.example.com:5000/a/b:v1", "--target-kubeconfig", "/nonexistent/kc", "--target-db", "x", "--target-data-dir", "y"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, `required flag(s) "to", "target-kubeconfig" not set`},
		{[]string{"migrate", "--disarm", "--to", "reg.example.com/a:v1"}, "takes no other flag (got --to)"},
		{append(slices.Clone(base), "--at-reboot=sometimes"), "give auto (migrate at the reboot) or manual"},
		{append(slices.Clone(base), "--at-reboot-timeout", "5m"), "--at-reboot-timeout needs --at-reboot"},
		{append(slices.Clone(base), "--at-reboot", "--at-reboot-timeout", "0s"), "give a positive duration"},
	} {
		code, stderr := run(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tt.args, code, tt.want, stderr)
		}
	}
}

// TestArmedSpec: the units run from / without this shell's environment, so
// the spec's flags are absolute and explicit; the source flags stay out of
// the command that finishes from a pushed bundle, and the ConfigMap's copy
// hides the database URLs.
func TestArmedSpec(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	kc := kubeconfig(t)
	if err := os.WriteFile(filepath.Join(dir, "kc"), mustRead(t, kc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := completeMigrate(t, "--to", "reg.example.com:5000/a/b:v1", "--target-kubeconfig", "kc",
		"--db", "postgres://admin:node0-pw@127.0.0.1/installer", "--data-dir", "data", "--exclude", "*/logs",
		"--target-db", "postgres://admin:c0-pw@10.0.0.5/installer", "--target-data-dir", "mnt",
		"--state-dir", "state", "--spool-dir", "spool", "--at-reboot", "--namespace-mapping", "cluster0=c0")
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := o.armedSpec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != atreboot.ModeAuto || s.StateDir != filepath.Join(dir, "state") || s.DataDir != filepath.Join(dir, "data") ||
		s.CaptureDir != filepath.Join(dir, "spool", "at-reboot-data") || s.Kubeconfig != filepath.Join(dir, "kc") || s.Namespace != "from-context" {
		t.Fatalf("spec %+v", s)
	}
	for _, want := range []string{"--target-data-dir=" + filepath.Join(dir, "mnt"), "--state-dir=" + filepath.Join(dir, "state"),
		"--spool-dir=" + filepath.Join(dir, "spool"), "--target-kubeconfig=" + filepath.Join(dir, "kc"), "--namespace=from-context",
		"--db=postgres://admin:node0-pw@127.0.0.1/installer", "--exclude=*/logs", "--namespace-mapping=cluster0=c0"} {
		if !slices.Contains(s.Args, want) {
			t.Errorf("spec args lack %s: %v", want, s.Args)
		}
	}
	for _, a := range s.Args {
		if strings.HasPrefix(a, "--data-dir") || strings.HasPrefix(a, "--at-reboot") {
			t.Errorf("spec args carry %s", a)
		}
	}
	fin := finishCommand("kubectl", s)
	for _, a := range fin[3:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if slices.Contains(sourceFlags, name) {
			t.Errorf("finish command reads node 0: %s", a)
		}
	}
	if !slices.Contains(fin, "--to=reg.example.com:5000/a/b:v1") || !slices.Contains(fin, "--state-dir="+filepath.Join(dir, "state")) {
		t.Errorf("finish command %v", fin)
	}
	if red := strings.Join(redactArgs(fin), " "); strings.Contains(red, "c0-pw") || !strings.Contains(red, "--target-db=<") {
		t.Errorf("redacted finish command %s", red)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
