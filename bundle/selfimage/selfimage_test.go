package selfimage

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The layer holds the binary, the CA bundle and /tmp, with their modes, is
// the same bytes when built twice, and its digests are those of its
// compressed and uncompressed bytes.
func TestWriteLayer(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "kubectl-assisted")
	if err := os.WriteFile(exe, []byte("\x7fELF not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := writeLayer(exe, ca, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := writeLayer(exe, ca, dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.desc.Digest != b.desc.Digest || a.diffID != b.diffID {
		t.Fatalf("two builds differ: %s/%s vs %s/%s", a.desc.Digest, a.diffID, b.desc.Digest, b.diffID)
	}
	blob, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(blob); "sha256:"+hex.EncodeToString(sum[:]) != a.desc.Digest.String() || int64(len(blob)) != a.desc.Size {
		t.Fatalf("descriptor %v does not describe the blob (%d bytes)", a.desc, len(blob))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(blob)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(plain); "sha256:"+hex.EncodeToString(sum[:]) != a.diffID.String() {
		t.Fatalf("diff ID %s is not the tar's digest", a.diffID)
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(strings.NewReader(string(plain)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
	}
	for name, mode := range map[string]int64{"usr/local/bin/kubectl-assisted": 0o755, "etc/ssl/certs/ca-certificates.crt": 0o644, "tmp/": 0o1777, "usr/local/bin/": 0o755} {
		h, ok := entries[name]
		if !ok || h.Mode != mode || h.Uid != 0 {
			t.Errorf("entry %s: %+v, want mode %o owned by root", name, h, mode)
		}
	}
	if len(entries) != 9 {
		t.Errorf("entries %v: want 7 directories, the CA bundle and the binary", keys(entries))
	}
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/local/"} {
		if _, ok := entries[d]; !ok {
			t.Errorf("no directory %s (parents come before their files): %v", d, keys(entries))
		}
	}
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A binary that needs a dynamic loader cannot run in an image without a C
// library: refused with a way out; a static one passes.
func TestCheckStatic(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	if err := checkStatic(sh); err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "--restore-image") {
		t.Fatalf("checkStatic(%s) = %v, want a refusal naming --restore-image", sh, err)
	}
	if err := checkStatic("/etc/hostname"); err == nil {
		t.Fatal("a file that is no ELF executable passed")
	}
	bin := filepath.Join(t.TempDir(), "static")
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := checkStatic(bin); err != nil {
		t.Fatalf("a CGO_ENABLED=0 build refused: %v", err)
	}
}
