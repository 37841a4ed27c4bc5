package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

// TestOpen_DamagedManifestInLayoutIsIntegrityError: a flipped byte in the
// manifest blob of a layout is reported by Open as an *IntegrityError with
// the digest reason (the bundle exit code for a damaged bundle), not as a
// failure to open the layout.
func TestOpen_DamagedManifestInLayoutIsIntegrityError(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	dir := filepath.Join(t.TempDir(), "layout")
	create(t, "oci:"+dir, CreateOptions{Database: fakeDB{data: "row\n"}, Recipients: []age.Recipient{id.Recipient()}})
	var idx struct{ Manifests []struct{ Digest string } }
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(idx.Manifests))
	}
	p := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(idx.Manifests[0].Digest, "sha256:"))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, "oci:"+dir, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
	var ie *IntegrityError
	if !errors.As(err, &ie) || ie.Reason != ReasonDigest {
		t.Fatalf("err = %T %v, want an *IntegrityError (%s)", err, err, ReasonDigest)
	}
}
