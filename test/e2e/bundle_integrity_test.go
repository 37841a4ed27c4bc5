package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestBundle_IntegrityFailures damages a real bundle in an OCI layout in every
// way the issue lists and checks that verify and extract refuse each with its
// own message and exit code, and that extract leaves nothing behind.
func TestBundle_IntegrityFailures(t *testing.T) {
	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	otherKey, _ := ageKey(t)
	data := assistedData(t, "pw")
	dir := filepath.Join(t.TempDir(), "layout")
	res := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", "oci:"+dir+":v1", "--data-dir", data, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json").Stdout)
	m := readLayoutManifest(t, dir, res.Digest)

	blobs := map[string]string{"manifest": res.Digest, "config": m.Config.Digest, "files layer": m.Layers[0].Digest}
	for name, digest := range blobs {
		t.Run("flipped byte in "+name, func(t *testing.T) {
			restore := damageBlob(t, dir, digest, func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b })
			defer restore()
			expectRefused(t, p, "oci:"+dir+":v1", key, 3, "digest mismatch")
		})
		t.Run("truncated "+name, func(t *testing.T) {
			restore := damageBlob(t, dir, digest, func(b []byte) []byte { return b[:len(b)-7] })
			defer restore()
			expectRefused(t, p, "oci:"+dir+":v1", key, 3, "size mismatch")
		})
	}
	t.Run("wrong identity", func(t *testing.T) {
		expectRefused(t, p, "oci:"+dir+":v1", otherKey, 4, "wrong --identity")
	})
	t.Run("no identity for extract", func(t *testing.T) {
		r := p.Run(t, "bundle", "extract", "oci:"+dir+":v1", "--signer", signerFile(t), "--dir", filepath.Join(t.TempDir(), "out"))
		if r.ExitCode != 4 || !strings.Contains(r.Stderr, "no identity was given") {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("unknown major version", func(t *testing.T) {
		l := handLayout(t, "2.0.0", nil)
		expectRefused(t, p, "oci:"+l, "", 5, "bundle format version 2.0.0 is not supported")
	})
	escapes := []struct {
		name string
		hdr  tar.Header
		want string
	}{
		{"dot-dot", tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}, "climbs out of the extraction root"},
		{"absolute", tar.Header{Name: "/tmp/evil", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}, "path is absolute"},
		{"symlink out", tar.Header{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777}, "symlink whose target is outside"},
		{"relative symlink out", tar.Header{Name: "a/up", Typeflag: tar.TypeSymlink, Linkname: "../../x", Mode: 0o777}, "symlink whose target is outside"},
		{"hard link out", tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd", Mode: 0o644}, "hard link whose target"},
	}
	for _, e := range escapes {
		t.Run("tar entry "+e.name, func(t *testing.T) {
			l := handLayout(t, "1.0.0", &e.hdr)
			expectRefused(t, p, "oci:"+l, "", 7, e.want)
		})
	}
}

// expectRefused runs verify and extract on ref and checks both fail with code
// and a message containing want, and that extract wrote nothing.
func expectRefused(t *testing.T, p *harness.Plugin, ref, key string, code int, want string) {
	t.Helper()
	// The signed bundle is checked with its signer; the hand-made ones
	// (unsigned) are about their content, so are accepted unsigned.
	idArgs := []string{"--allow-unsigned"}
	if strings.HasSuffix(ref, ":v1") {
		idArgs = []string{"--signer", signerFile(t)}
	}
	if key != "" {
		idArgs = append(idArgs, "--identity", key)
	}
	v := p.Run(t, append([]string{"bundle", "verify", ref}, idArgs...)...)
	if v.ExitCode != code || !strings.Contains(v.Stderr, want) {
		t.Fatalf("verify: exit %d, want %d with %q\n%s", v.ExitCode, code, want, v.Combined())
	}
	if strings.Count(strings.TrimSpace(v.Stderr), "\n") > 1 {
		t.Fatalf("verify printed more than an error and a hint:\n%s", v.Stderr)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	x := p.Run(t, append([]string{"bundle", "extract", ref, "--dir", out}, idArgs...)...)
	if x.ExitCode != code || !strings.Contains(x.Stderr, want) {
		t.Fatalf("extract: exit %d, want %d with %q\n%s", x.ExitCode, code, want, x.Combined())
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("extract left %v behind", entries)
	}
	for _, escaped := range []string{filepath.Join(parent, "..", "evil"), "/tmp/evil"} {
		if _, err := os.Lstat(escaped); err == nil {
			t.Fatalf("extract wrote %s", escaped)
		}
	}
}

func readLayoutManifest(t *testing.T, dir, digest string) manifest {
	t.Helper()
	b, err := os.ReadFile(blobPath(dir, digest))
	if err != nil {
		t.Fatal(err)
	}
	return parseManifest(t, string(b))
}

func blobPath(dir, digest string) string {
	return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// damageBlob rewrites a blob in place and returns a function that undoes it.
func damageBlob(t *testing.T, dir, digest string, f func([]byte) []byte) func() {
	t.Helper()
	p := blobPath(dir, digest)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, f(bytes.Clone(orig)), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() { _ = os.WriteFile(p, orig, 0o644) }
}

// handLayout writes an unencrypted bundle by hand: format version v and, when
// entry is set, a files layer whose tar holds that one entry.
func handLayout(t *testing.T, v string, entry *tar.Header) string {
	t.Helper()
	dir := t.TempDir()
	put := func(b []byte) (string, int64) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blobPath(dir, d), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return d, int64(len(b))
	}
	files := ""
	layers := "[]"
	if entry != nil {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		if err := tw.WriteHeader(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(entry); err != nil {
			t.Fatal(err)
		}
		if entry.Size > 0 {
			tw.Write([]byte("evil"))
		}
		tw.Close()
		var zb bytes.Buffer
		zw, _ := zstd.NewWriter(&zb)
		zw.Write(tb.Bytes())
		zw.Close()
		ld, ls := put(zb.Bytes())
		// The metadata declares what the tar holds: only the entry's own
		// rule refuses it.
		fc, _ := json.Marshal(counted(t, tb.Bytes()))
		files = `,"files":` + string(fc)
		layers = fmt.Sprintf(`[{"mediaType":"application/vnd.kubectl-assisted.bundle.files.v1.tar+zstd","digest":%q,"size":%d}]`, ld, ls)
	}
	cfg := fmt.Sprintf(`{"formatVersion":%q,"created":"2025-01-01T00:00:00Z","source":{}%s,"encryption":{"scheme":"none"}}`, v, files)
	cd, cs := put([]byte(cfg))
	man := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":%q,"config":{"mediaType":%q,"digest":%q,"size":%d},"layers":%s,"annotations":{"io.kubectl-assisted.bundle.format-version":%q}}`,
		bundleArtifactType, bundleConfigType, cd, cs, layers, v)
	md, ms := put([]byte(man))
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []map[string]any{{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
		"annotations": map[string]string{"org.opencontainers.image.ref.name": "latest"},
	}}})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
