package bundle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"golang.org/x/sys/unix"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// fakeDB is a DatabaseSource that writes fixed bytes.
type fakeDB struct{ data string }

func (f fakeDB) Dump(_ context.Context, w io.Writer) (*DatabaseSummary, error) {
	if _, err := io.WriteString(w, f.data); err != nil {
		return nil, err
	}
	return &DatabaseSummary{ServerVersion: "15.8", LastMigration: "20240101000000", Tables: []TableInfo{{Schema: "public", Name: "clusters", Rows: 1, Checksum: "sha256:abc"}}}, nil
}

const clusterID = "3f0b8e7c-1f2a-4b3c-9d4e-5f6a7b8c9d0e"

// dataDir builds a small assisted-service /data tree.
func dataDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	mk := func(rel, content string, mode os.FileMode) string {
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk(clusterID+"/kubeadmin-password", "pw", 0o600)
	m := mk(clusterID+"/manifests/openshift/user.yaml", "kind: ConfigMap\n", 0o644)
	if err := unix.Setxattr(m, "user.assisted-installer-manifest-source", []byte("user"), 0); err != nil {
		// A filesystem without user xattrs cannot hold what assisted-service
		// writes: under CI that is a broken machine, not a reason to skip.
		if os.Getenv("CI") == "true" {
			t.Fatalf("TMPDIR has no user xattrs (%v): point TMPDIR at a filesystem that has them", err)
		}
		t.Skipf("no user xattrs in TMPDIR: %v (CI fails here)", err)
	}
	mk("installercache/openshift-install", "binary", 0o755)
	if err := os.Symlink("manifests/openshift/user.yaml", filepath.Join(d, clusterID, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	return d
}

func newIdentity(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func create(t *testing.T, ref string, opts CreateOptions) *Result {
	t.Helper()
	res, err := Create(context.Background(), ref, oci.RegistryOptions{}, opts)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return res
}

func TestCreateOpenVerifyExtract_Layout(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	data := dataDir(t)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	res := create(t, ref, CreateOptions{
		Database:   fakeDB{data: "COPY clusters ...\n"},
		Files:      &FilesOptions{Dir: data},
		Recipients: []age.Recipient{id.Recipient()},
		Creator:    "test",
	})
	if len(res.Layers) != 2 || res.Layers[0].Kind != LayerDatabase || res.Layers[1].Kind != LayerFiles {
		t.Fatalf("layers = %+v", res.Layers)
	}
	if got := res.Metadata.Source.ClusterIDs; len(got) != 1 || got[0] != clusterID {
		t.Fatalf("cluster ids = %v", got)
	}

	b, err := Open(ctx, ref, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Descriptor.Digest.String() != res.Digest {
		t.Fatalf("digest %s, created %s", b.Descriptor.Digest, res.Digest)
	}
	rep, err := b.Verify(ctx, VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, l := range rep.Layers {
		if !l.Decoded {
			t.Fatalf("layer %s not decoded", l.Kind)
		}
	}
	rc, err := b.Database(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(db) != "COPY clusters ...\n" {
		t.Fatalf("database = %q, %v", db, err)
	}

	out := filepath.Join(t.TempDir(), "staged")
	sum, err := b.ExtractFiles(ctx, out, files.ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 2 || sum.Symlinks != 1 {
		t.Fatalf("extract summary = %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(out, "installercache")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("installercache was bundled: %v", err)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(out, clusterID, "manifests/openshift/user.yaml"), "user.assisted-installer-manifest-source", buf)
	if err != nil || string(buf[:n]) != "user" {
		t.Fatalf("xattr = %q, %v", buf[:n], err)
	}
	fi, err := os.Stat(filepath.Join(out, clusterID, "kubeadmin-password"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeadmin-password mode = %v, %v", fi.Mode(), err)
	}
	src, _ := os.Stat(filepath.Join(data, clusterID, "kubeadmin-password"))
	if !fi.ModTime().Equal(src.ModTime()) {
		t.Fatalf("mtime %v, want %v", fi.ModTime(), src.ModTime())
	}
	if l, err := os.Readlink(filepath.Join(out, clusterID, "link.yaml")); err != nil || l != "manifests/openshift/user.yaml" {
		t.Fatalf("symlink = %q, %v", l, err)
	}
}

func TestCreate_UnencryptedIsReproducible(t *testing.T) {
	data := dataDir(t)
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var digests []string
	for i := 0; i < 2; i++ {
		ref := "oci:" + filepath.Join(t.TempDir(), "l")
		res := create(t, ref, CreateOptions{Database: fakeDB{data: "x"}, Files: &FilesOptions{Dir: data}, Created: created, Creator: "test"})
		digests = append(digests, res.Digest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("digests differ: %v", digests)
	}
	// Encrypted: age output is randomized, so digests differ by design.
	id := newIdentity(t)
	a := create(t, "oci:"+filepath.Join(t.TempDir(), "a"), CreateOptions{Files: &FilesOptions{Dir: data}, Created: created, Recipients: []age.Recipient{id.Recipient()}})
	c := create(t, "oci:"+filepath.Join(t.TempDir(), "c"), CreateOptions{Files: &FilesOptions{Dir: data}, Created: created, Recipients: []age.Recipient{id.Recipient()}})
	if a.Digest == c.Digest {
		t.Fatal("encrypted bundles have equal digests; age output should be randomized")
	}
	// What stays reproducible is the plaintext (docs/bundle-format.md).
	var plains [][]byte
	for _, ref := range []string{a.Reference, c.Reference} {
		b, err := Open(context.Background(), ref, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := b.OpenLayer(context.Background(), LayerFiles)
		if err != nil {
			t.Fatal(err)
		}
		p, err := io.ReadAll(rc)
		rc.Close()
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		plains = append(plains, p)
	}
	if !bytes.Equal(plains[0], plains[1]) {
		t.Fatal("the decrypted files layers of equal input differ")
	}
}

func TestOpen_Failures(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	data := dataDir(t)
	dir := filepath.Join(t.TempDir(), "layout")
	res := create(t, "oci:"+dir, CreateOptions{Database: fakeDB{data: strings.Repeat("row\n", 5000)}, Files: &FilesOptions{Dir: data}, Recipients: []age.Recipient{id.Recipient()}})
	blob := func(d string) string { return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:")) }
	// verifyWith replaces the blob d by what alter makes of it (nil: removes
	// it), returns Verify's error, and puts the blob back.
	verifyWith := func(t *testing.T, d string, alter func([]byte) []byte) error {
		t.Helper()
		p := blob(d)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, orig, 0o644)
		if alter == nil {
			os.Remove(p)
		} else {
			os.WriteFile(p, alter(orig), 0o644)
		}
		b, err := Open(ctx, "oci:"+dir, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Verify(ctx, VerifyOptions{})
		return err
	}

	t.Run("wrong identity", func(t *testing.T) {
		b, err := Open(ctx, "oci:"+dir, OpenOptions{Identities: []age.Identity{newIdentity(t)}, AllowUnsigned: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Verify(ctx, VerifyOptions{})
		var de *DecryptError
		if !errors.As(err, &de) || !errors.Is(err, ErrWrongIdentity) {
			t.Fatalf("err = %v", err)
		}
	})
	for _, l := range res.Layers {
		t.Run("missing "+string(l.Kind), func(t *testing.T) {
			err := verifyWith(t, l.Digest, nil)
			var me *MissingBlobError
			if !errors.As(err, &me) || me.Digest != l.Digest {
				t.Fatalf("err = %v", err)
			}
		})
		// Altered in place, cut short, or longer than its descriptor (the
		// check reads one byte past the size; for an encrypted blob it runs
		// as a tap beside the reads): an *IntegrityError with its reason.
		for _, tc := range []struct {
			name   string
			alter  func([]byte) []byte
			reason string
		}{
			{"flipped byte in ", func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 0x40; return b }, ReasonDigest},
			{"truncated ", func(b []byte) []byte { return b[:len(b)-10] }, ReasonSize},
			{"extended ", func(b []byte) []byte { return append(bytes.Clone(b), "more"...) }, ReasonSize},
		} {
			t.Run(tc.name+string(l.Kind), func(t *testing.T) {
				err := verifyWith(t, l.Digest, tc.alter)
				var ie *IntegrityError
				if !errors.As(err, &ie) || ie.Reason != tc.reason {
					t.Fatalf("err = %v", err)
				}
			})
		}
	}
}

// TestVerify_DatabaseLayerLast: Verify reads the database layer after every
// other one (parsing its statements is the costly check), and still reports
// the layers in the manifest's order.
func TestVerify_DatabaseLayerLast(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	create(t, ref, CreateOptions{Database: fakeDB{data: "x\n"}, Files: &FilesOptions{Dir: dataDir(t)},
		Recipients: []age.Recipient{id.Recipient()}, Creator: "test"})
	b, err := Open(ctx, ref, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Layers[0].Kind != LayerDatabase {
		t.Fatalf("the manifest lists %s first; the test needs the database layer first", b.Layers[0].Kind)
	}
	filesDoneFirst := false
	rep, err := b.Verify(ctx, VerifyOptions{Database: func(_ context.Context, r io.Reader) error {
		filesDoneFirst = b.FilesChecked != nil
		_, err := io.Copy(io.Discard, r)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !filesDoneFirst {
		t.Fatal("the database layer was read before the files layer")
	}
	if len(rep.Layers) != 2 || rep.Layers[0].Kind != LayerDatabase || rep.Layers[1].Kind != LayerFiles {
		t.Fatalf("report order %+v, want the manifest's", rep.Layers)
	}
}
