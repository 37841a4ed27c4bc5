package migrate

import (
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// killedAt stands for a process killed at the point of writeNew where the
// hook runs: the hook panics, the test recovers.
type killedAt struct{}

func runKilledBeforeLink(t *testing.T, f func()) {
	t.Helper()
	beforeLink = func(path string) {
		// The file is whole in its temporary file; path must not exist yet.
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s exists before its content is whole", path)
		}
		panic(killedAt{})
	}
	defer func() {
		beforeLink = nil
		if r := recover(); r != (killedAt{}) {
			t.Fatalf("the write was not interrupted where the test kills it: %v", r)
		}
	}()
	f()
}

// TestState_KilledWhileWritingKeysThenRerun: a run killed while it writes
// the generated identity or signing key leaves neither file behind (only a
// temporary file), so the rerun generates them and goes on; before, an
// empty signing.key made every rerun fail as "damaged". The files a rerun
// writes are 0600 and the killed run's temporary files are gone.
func TestState_KilledWhileWritingKeysThenRerun(t *testing.T) {
	root := t.TempDir()
	s, err := LoadState(root, "registry.example/node0:v1", "https://api.cluster0:6443", "assisted")
	if err != nil {
		t.Fatal(err)
	}
	runKilledBeforeLink(t, func() { _, _ = s.EnsureIdentity() })
	runKilledBeforeLink(t, func() { _, _ = s.EnsureSigningKey() })
	for _, p := range []string{s.IdentityPath(), s.SigningKeyPath()} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists after a run killed while writing it", p)
		}
	}

	// A killed process leaves its temporary files (the panic above let
	// writeNew's deferred removal run; SIGKILL does not): put back what it
	// would leave, half written.
	for _, p := range []string{s.IdentityPath(), s.SigningKeyPath()} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".new-123"), []byte("-----BEGIN PRIV"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The rerun.
	s, err = LoadState(root, "registry.example/node0:v1", "https://api.cluster0:6443", "assisted")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.EnsureIdentity()
	if err != nil || id == nil {
		t.Fatalf("rerun, identity: %v", err)
	}
	k, err := s.EnsureSigningKey()
	if err != nil || k == nil {
		t.Fatalf("rerun, signing key: %v", err)
	}
	// Read again: the same identity and key, not new ones.
	id2, err := s.EnsureIdentity()
	if err != nil || id2.String() != id.String() {
		t.Fatalf("the identity changed between two calls: %v", err)
	}
	k2, err := s.EnsureSigningKey()
	if err != nil || !k2.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(k.Public()) {
		t.Fatalf("the signing key changed between two calls: %v", err)
	}
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".new-") {
			t.Errorf("left over: %s", e.Name())
		}
	}
	for _, p := range []string{s.IdentityPath(), s.SigningKeyPath()} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", filepath.Base(p), err, fi.Mode().Perm())
		}
	}
}

// TestWriteNew_NeverOverwrites: a file that exists is left as it is.
func TestWriteNew_NeverOverwrites(t *testing.T) {
	p := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeNew(p, []byte("second")); err == nil {
		t.Fatal("writeNew replaced an existing file")
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("the existing file now holds %q", b)
	}
}
