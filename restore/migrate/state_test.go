package migrate

import (
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestState_KilledWhileWritingKeysThenRerun: a run killed while it writes
// the generated identity or signing key leaves only a half-written temporary
// file beside each, never the file itself (restore/internal/atomicfile:
// TestCreate_KilledBeforePublishLeavesNoFile), so the rerun generates them
// and goes on; before, an empty signing.key made every rerun fail as
// "damaged". The files the rerun writes are 0600, it keeps them on the next
// call, and the killed run's temporary files are gone.
func TestState_KilledWhileWritingKeysThenRerun(t *testing.T) {
	root := t.TempDir()
	s, err := LoadState(root, "registry.example/node0:v1", "https://api.cluster0:6443", "assisted")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.IdentityPath(), s.SigningKeyPath()} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp-123"), []byte("-----BEGIN PRIV"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	id, err := s.EnsureIdentity()
	if err != nil || id == nil {
		t.Fatalf("rerun, identity: %v", err)
	}
	k, err := s.EnsureSigningKey()
	if err != nil || k == nil {
		t.Fatalf("rerun, signing key: %v", err)
	}
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
		if strings.Contains(e.Name(), ".tmp-") {
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
