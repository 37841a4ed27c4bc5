package plugin

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
)

// dsnForms are the ways a connection string can hold a password.
var dsnForms = []struct{ name, dsn, pw string }{
	{"URL userinfo", "postgres://admin:s3cr%40t-1@127.0.0.1:5432/installer?sslmode=disable", "s3cr@t-1"},
	{"URL query", "postgresql://admin@127.0.0.1/installer?password=s3cr%20t-2&application_name=x", "s3cr t-2"},
	{"URL both", "postgres://admin:other@127.0.0.1/installer?password=s3cret-3", "s3cret-3"},
	{"key=value", "host=127.0.0.1 user=admin password=s3cret-4 dbname=installer", "s3cret-4"},
	{"key = value with spaces", "host=127.0.0.1 user=admin password = s3cret-5 dbname=installer", "s3cret-5"},
	{"quoted with a space and a quote", "host=127.0.0.1 password = 'a b\\'s3cret-6' dbname=installer user=admin", "a b's3cret-6"},
	{"escaped bare value", `host=127.0.0.1 user=admin dbname=installer password=s3\ cret-7`, "s3 cret-7"},
	{"no password", "host=127.0.0.1 user=admin dbname=installer", ""},
}

func TestSplitPassword(t *testing.T) {
	for _, c := range dsnForms {
		t.Run(c.name, func(t *testing.T) {
			dsn, pw, err := splitPassword(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if pw != c.pw {
				t.Fatalf("password %q, want %q", pw, c.pw)
			}
			if strings.Contains(dsn, "s3") || strings.Contains(dsn, "password") { // every password here holds "s3"
				t.Fatalf("the stripped DSN %q still holds the password", dsn)
			}
			// pgx reads the stripped DSN plus PGPASSWORD as the original.
			t.Setenv("PGPASSWORD", pw)
			t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
			want, err := pgx.ParseConfig(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.ParseConfig(dsn)
			if err != nil {
				t.Fatalf("stripped DSN %q: %v", dsn, err)
			}
			if got.Host != want.Host || got.Port != want.Port || got.User != want.User || got.Database != want.Database || got.Password != want.Password || got.RuntimeParams["application_name"] != want.RuntimeParams["application_name"] {
				t.Fatalf("stripped %q reads as %s@%s:%d/%s, want %s@%s:%d/%s", dsn, got.User, got.Host, got.Port, got.Database, want.User, want.Host, want.Port, want.Database)
			}
		})
	}
	for _, bad := range []string{"host=db password='unterminated", "host=db password"} {
		if _, _, err := splitPassword(bad); err == nil || strings.Contains(err.Error(), "host=db") {
			t.Errorf("splitPassword(%q) = %v, want a refusal that does not quote the DSN", bad, err)
		}
	}
}

// TestChildRestoreCommand_NoPasswordInArgv runs the child command of a
// direct migrate for every DSN form, with a script standing in for the
// binary that prints its own /proc/PID/cmdline (what ps shows any local
// user) and PGPASSWORD: the password is in the environment only.
func TestChildRestoreCommand_NoPasswordInArgv(t *testing.T) {
	script := filepath.Join(t.TempDir(), "child")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntr '\\0' ' ' < /proc/$$/cmdline\necho\necho \"PGPASSWORD=$PGPASSWORD\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Fatalf("no /proc here: %v", err)
	}
	for _, c := range dsnForms {
		t.Run(c.name, func(t *testing.T) {
			o := &MigrateOptions{TargetDB: c.dsn, TargetDataDir: "/data", TargetKubeconfig: "kc", Namespace: "ns",
				state: &migrateState{Pinned: "reg/x@sha256:0"}, log: io.Discard}
			cmd, err := o.childRestoreCommand(context.Background(), script, "")
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(string(out), "\n", 2)
			cmdline := lines[0]
			if !strings.Contains(cmdline, "restore reg/x@sha256:0 --db ") {
				t.Fatalf("not the child's command line: %q", cmdline)
			}
			if strings.Contains(cmdline, "s3") || strings.Contains(cmdline, "password") {
				t.Fatalf("the password is in argv: %q", cmdline)
			}
			if !strings.Contains(lines[1], "PGPASSWORD="+c.pw+"\n") {
				t.Fatalf("PGPASSWORD: %q, want %q", lines[1], c.pw)
			}
		})
	}
}

func TestRegistryAuthForKeepsOnlyTheBundleRegistry(t *testing.T) {
	f := filepath.Join(t.TempDir(), "auth.json")
	cfg := `{"auths":{"quay.io":{"auth":"b3RoZXI6c2VjcmV0"},"https://reg.example.com:5000":{"auth":"dXNlcjpwYXNz"}}}`
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := registryAuthFor(f, "reg.example.com:5000")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Auths) != 1 || out.Auths["reg.example.com:5000"].Auth != "dXNlcjpwYXNz" {
		t.Fatalf("want only reg.example.com:5000, got %s", got)
	}
	if none, _ := registryAuthFor(f, "other:1"); none != nil {
		t.Fatalf("no entry should give no Secret, got %s", none)
	}
}

func TestReadAgentServiceConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("asc.yaml", `apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata: {name: agent}
spec:
  databaseStorage: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  filesystemStorage: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Gi}}}
`)
	a, err := readAgentServiceConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if a.DatabaseSize.String() != "10Gi" || a.FilesystemSize.String() != "100Gi" {
		t.Fatalf("sizes %s %s", a.DatabaseSize.String(), a.FilesystemSize.String())
	}
	for name, body := range map[string]string{
		"wrongname.yaml": strings.Replace(mustRead(t, good), "name: agent", "name: other", 1),
		"nosize.yaml":    strings.Replace(mustRead(t, good), "storage: 10Gi", "storage: ''", 1),
		"kind.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: agent}\n",
	} {
		if _, err := readAgentServiceConfig(write(name, body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMigrateStateRoundTripAndReset(t *testing.T) {
	root := t.TempDir()
	s, err := loadState(root, "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.ensureIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.identityPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity file mode: %v %v", fi, err)
	}
	for _, step := range migrateSteps {
		s.Steps[step] = &stepState{State: "done"}
	}
	s.Digest = "sha256:abc"
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	again, err := loadState(root, "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != "sha256:abc" || !again.done(stepSwitchover) {
		t.Fatalf("state not kept: %+v", again)
	}
	id2, err := again.ensureIdentity()
	if err != nil || id2.String() != id.String() {
		t.Fatalf("identity not reused: %v", err)
	}
	again.resetFrom(stepRestore)
	if !again.done(stepBundle) || again.done(stepRestore) || again.done(stepSwitchover) {
		t.Fatalf("resetFrom(restore) kept the wrong steps: %+v", again.Steps)
	}
	other, _ := loadState(root, "reg:5000/a:v2", "https://c0:6443", "ns")
	if other.Digest != "" || other.dir == again.dir {
		t.Fatal("another --to must start another run")
	}
	data, _ := os.ReadFile(filepath.Join(again.dir, "state.json"))
	if strings.Contains(string(data), "AGE-SECRET-KEY") {
		t.Fatal("the state file holds the private key")
	}
}

func TestStepErrorExitCodes(t *testing.T) {
	for i, step := range migrateSteps {
		err := stepError(step, errors.New("boom"))
		if got := clierr.ExitCode(err); got != clierr.ExitStepBase+i+1 {
			t.Errorf("%s: exit %d, want %d", step, got, clierr.ExitStepBase+i+1)
		}
		if !strings.Contains(err.Error(), step) {
			t.Errorf("%s: message %q does not name the step", step, err)
		}
	}
	if got := clierr.ExitCode(stepError(stepBundle, clierr.New(errors.New("x"), "", clierr.ExitUsage))); got != clierr.ExitUsage {
		t.Errorf("usage errors keep exit 2, got %d", got)
	}
}

// The run's signing key pair: made once (private 0600), reused by a rerun,
// and its public half is what the restore trusts.
func TestMigrateSigningKey(t *testing.T) {
	s, err := loadState(t.TempDir(), "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.signer(); err == nil {
		t.Fatal("a signer before any key was made")
	}
	k, err := s.ensureSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.signingKeyPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing key mode: %v %v", fi, err)
	}
	pub, pemText, err := s.signer()
	if err != nil || !strings.Contains(pemText, "BEGIN PUBLIC KEY") {
		t.Fatalf("signer: %v %q", err, pemText)
	}
	payload := []byte("a manifest digest, say")
	sig, err := k.Sign(nil, payload, crypto.Hash(0))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(pub.Public.(ed25519.PublicKey), payload, sig) {
		t.Fatal("signing.pub is not the public half of signing.key")
	}
	k2, err := s.ensureSigningKey()
	if err != nil || !k2.Public().(ed25519.PublicKey).Equal(k.Public()) {
		t.Fatalf("the rerun made another key: %v", err)
	}
	// A damaged key file is an error, never silently replaced.
	if err := os.WriteFile(s.signingKeyPath(), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ensureSigningKey(); err == nil || strings.Contains(err.Error(), "garbage") {
		t.Fatalf("damaged key: %v", err)
	}
}
