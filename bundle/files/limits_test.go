package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseTar is a tar whose one entry is a GNU PAX 0.1 sparse file claiming
// realSize bytes with no data stored. archive/tar's writer refuses GNU.sparse
// records, so they are written under another name of the same length and
// renamed in the bytes (the PAX records are not covered by a checksum).
func sparseTar(t *testing.T, realSize string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	hdr := &tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX, PAXRecords: map[string]string{
		"GNU.xparse.major": "0", "GNU.xparse.minor": "1", "GNU.xparse.numblocks": "1",
		"GNU.xparse.map": "0,0", "GNU.xparse.realsize": realSize,
	}}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	return bytes.ReplaceAll(b.Bytes(), []byte("GNU.xparse."), []byte("GNU.sparse."))
}

func TestRules_RefusedBeforeAnyWrite(t *testing.T) {
	reg := func(name string, size int64) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
	}
	xattr := func(name string, n int) tar.Header {
		h := reg("f", 1)
		h.PAXRecords = map[string]string{"SCHILY.xattr." + name: strings.Repeat("v", n)}
		return h
	}
	mode := func(typ byte, name string, m int64) tar.Header {
		return tar.Header{Name: name, Typeflag: typ, Mode: m}
	}
	longPath := strings.Repeat(strings.Repeat("d", 200)+"/", 21) + "f" // 4222 bytes
	declared := &Declared{Files: 1, Dirs: 1, Bytes: 10}
	// A header that claims 1 TiB with only a few bytes behind it: refused on
	// the header by the cap, before a byte is written.
	var huge bytes.Buffer
	tw := tar.NewWriter(&huge)
	tw.WriteHeader(&tar.Header{Name: "huge", Typeflag: tar.TypeReg, Size: 1 << 40, Mode: 0o644})
	huge.WriteString("tiny")
	tests := []struct {
		name    string
		data    []byte
		rules   Rules
		want    string // "" = accepted
		wantErr any
	}{
		{"component of 255 bytes", tarOf(reg(strings.Repeat("n", 255), 1)), Rules{}, "", nil},
		{"component of 300 bytes", tarOf(reg("a/"+strings.Repeat("n", 300), 1)), Rules{}, ReasonNameTooLong, nil},
		{"path over PATH_MAX", tarOf(reg(longPath, 1)), Rules{}, ReasonPathTooLong, nil},
		{"symlink target over PATH_MAX", tarOf(tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: strings.Repeat("a/", 2100)}), Rules{}, ReasonLinkTooLong, nil},
		{"user xattr of 4000 bytes", tarOf(xattr("user.big", 4000)), Rules{}, "", nil},
		{"user xattr of 70 KB", tarOf(xattr("user.big", 70000)), Rules{}, ReasonXattrSize, nil},
		{"xattr name of 300 bytes", tarOf(xattr("user."+strings.Repeat("n", 300), 1)), Rules{}, ReasonXattrSize, nil},
		{"trusted xattr", tarOf(xattr("trusted.overlay.opaque", 1)), Rules{}, ReasonXattrNotUser, nil},
		{"setuid file", tarOf(tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o4777}), Rules{}, ReasonSpecialBits, nil},
		{"setgid dir", tarOf(mode(tar.TypeDir, "d/", 0o2755)), Rules{}, ReasonSpecialBits, nil},
		{"sticky dir", tarOf(mode(tar.TypeDir, "d/", 0o1777)), Rules{}, ReasonSpecialBits, nil},
		{"setuid with PreserveSpecialBits", tarOf(tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o4755}), Rules{PreserveSpecialBits: true}, "", nil},
		{"sparse entry", sparseTar(t, "2147483648"), Rules{}, ReasonSparse, nil},
		{"as declared", tarOf(mode(tar.TypeDir, "d/", 0o755), reg("d/f", 10)), Rules{Declared: declared}, "", nil},
		{"one byte over the declared size", tarOf(mode(tar.TypeDir, "d/", 0o755), reg("d/f", 11)), Rules{Declared: declared}, ReasonExpansion, nil},
		{"header claims 1 TiB", huge.Bytes(), Rules{Declared: declared}, ReasonExpansion, nil},
		{"one file more than declared", tarOf(mode(tar.TypeDir, "d/", 0o755), reg("d/f", 5), reg("d/g", 5)), Rules{Declared: declared}, ReasonExpansion, nil},
		{"a symlink not declared", tarOf(mode(tar.TypeDir, "d/", 0o755), reg("d/f", 10), tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "f"}), Rules{Declared: declared}, ReasonExpansion, nil},
		{"less than declared", tarOf(mode(tar.TypeDir, "d/", 0o755), reg("d/f", 9)), Rules{Declared: declared}, "", &CountMismatchError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cerr := CheckRules(context.Background(), bytes.NewReader(tt.data), tt.rules)
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			_, xerr := Extract(context.Background(), bytes.NewReader(tt.data), root, ExtractOptions{Rules: tt.rules})
			for i, e := range []error{cerr, xerr} {
				what := []string{"Check", "Extract"}[i]
				var ue *UnsafeEntryError
				var cm *CountMismatchError
				switch {
				case tt.wantErr != nil:
					if !errors.As(e, &cm) {
						t.Fatalf("%s: err = %v, want a count mismatch", what, e)
					}
				case tt.want == "" && e != nil:
					t.Fatalf("%s refused: %v", what, e)
				case tt.want != "" && (!errors.As(e, &ue) || !strings.HasPrefix(ue.Reason, tt.want)):
					t.Fatalf("%s: err = %v, want reason %q", what, e, tt.want)
				}
				if ue != nil && len(ue.Error()) > 400 {
					t.Fatalf("%s: message of %d bytes quotes the whole bomb", what, len(ue.Error()))
				}
			}
			if tt.want != "" || tt.wantErr != nil {
				if entries, _ := os.ReadDir(parent); len(entries) != 0 {
					t.Fatalf("refused extraction left %v", entries)
				}
			}
		})
	}
}

// TestCheck_XattrAtTheLinuxLimit: 64 KiB is the kernel's limit of a value
// (XATTR_SIZE_MAX); whether a filesystem takes that much is the target's
// business (restore probes it), so the format accepts it.
func TestCheck_XattrAtTheLinuxLimit(t *testing.T) {
	h := tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644, PAXRecords: map[string]string{"SCHILY.xattr.user.big": strings.Repeat("v", XattrValueMax)}}
	sum, err := Check(context.Background(), bytes.NewReader(tarOf(h)))
	if err != nil {
		t.Fatal(err)
	}
	if sum.MaxXattrBytes != int64(len("user.big")+XattrValueMax) {
		t.Fatalf("MaxXattrBytes = %d", sum.MaxXattrBytes)
	}
}

func TestExtract_SpecialBits(t *testing.T) {
	data := tarOf(tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o2755}, tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 1})
	dst := filepath.Join(t.TempDir(), "x")
	if _, err := Extract(context.Background(), bytes.NewReader(data), dst, ExtractOptions{Rules: Rules{PreserveSpecialBits: true}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "d", "f"))
	if err != nil || fi.Mode()&fs.ModeSetuid == 0 {
		t.Fatalf("asked to preserve: mode %v %v", fi.Mode(), err)
	}
	di, err := os.Stat(filepath.Join(dst, "d"))
	if err != nil || di.Mode()&fs.ModeSetgid == 0 {
		t.Fatalf("asked to preserve: dir mode %v %v", di.Mode(), err)
	}
}

func TestWrite_DropsSpecialBits(t *testing.T) {
	src := t.TempDir()
	f := filepath.Join(src, "f")
	os.WriteFile(f, []byte("x"), 0o644)
	if err := os.Chmod(f, fs.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(f); fi.Mode()&fs.ModeSetuid == 0 {
		t.Fatal("the test cannot set the setuid bit here")
	}
	var buf bytes.Buffer
	if _, err := Write(context.Background(), &buf, src, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Mode != 0o755 {
		t.Fatalf("stored mode %o, want 755", hdr.Mode)
	}
}
