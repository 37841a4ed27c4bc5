package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheck_UnsafeEntries(t *testing.T) {
	reg := func(name string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}
	}
	tests := []struct {
		name    string
		entries []tar.Header
		want    string // "" = accepted
	}{
		{"plain tree", []tar.Header{{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("a/f")}, ""},
		{"dot slash prefix", []tar.Header{reg("./a")}, ""},
		{"inside symlink", []tar.Header{reg("a/f"), {Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "f"}}, ""},
		{"leading dot-dot symlink", []tar.Header{reg("a/b/f"), {Name: "a/b/l", Typeflag: tar.TypeSymlink, Linkname: "../../a/b/f"}}, ""},
		{"hard link to earlier file", []tar.Header{reg("f"), {Name: "h", Typeflag: tar.TypeLink, Linkname: "f"}}, ""},
		{"dot-dot", []tar.Header{reg("a/../../x")}, ReasonParent},
		{"absolute", []tar.Header{reg("/etc/x")}, ReasonAbsolute},
		{"symlink absolute", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}, ReasonSymlinkOut},
		{"symlink climbs", []tar.Header{{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../../x"}}, ReasonSymlinkOut},
		{"symlink dot-dot after a name", []tar.Header{{Name: "s", Typeflag: tar.TypeSymlink, Linkname: "."}, {Name: "t", Typeflag: tar.TypeSymlink, Linkname: "s/.."}}, ReasonSymlinkOut},
		{"through symlink", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "a"}, reg("l/x")}, ReasonThroughLink},
		{"hard link out", []tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "../etc/passwd"}}, ReasonHardLinkOut},
		{"hard link to later file", []tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "f"}, reg("f")}, ReasonHardLinkOut},
		{"duplicate", []tar.Header{reg("f"), reg("f")}, ReasonDuplicate},
		{"device", []tar.Header{{Name: "d", Typeflag: tar.TypeChar}}, ReasonEntryType},
		{"security xattr", []tar.Header{{Name: "f", Typeflag: tar.TypeReg, PAXRecords: map[string]string{"SCHILY.xattr.security.selinux": "x"}}}, ReasonXattrNotUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tarOf(tt.entries...)
			_, err := Check(context.Background(), bytes.NewReader(data))
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			_, xerr := Extract(context.Background(), bytes.NewReader(data), root, ExtractOptions{})
			for _, e := range []error{err, xerr} {
				var ue *UnsafeEntryError
				switch {
				case tt.want == "" && e != nil:
					t.Fatalf("refused: %v", e)
				case tt.want != "" && (!errors.As(e, &ue) || ue.Reason[:len(tt.want)] != tt.want):
					t.Fatalf("err = %v, want reason %q", e, tt.want)
				}
			}
			if tt.want != "" {
				if entries, _ := os.ReadDir(parent); len(entries) != 0 {
					t.Fatalf("refused extraction left %v", entries)
				}
			}
		})
	}
}

func TestWriteExtract_RoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "c", "sub"), 0o750)
	os.WriteFile(filepath.Join(src, "c", "sub", "f"), []byte("data"), 0o640)
	os.Link(filepath.Join(src, "c", "sub", "f"), filepath.Join(src, "c", "hard"))
	os.Symlink("sub/f", filepath.Join(src, "c", "soft"))
	os.MkdirAll(filepath.Join(src, "installercache"), 0o755)
	os.WriteFile(filepath.Join(src, "installercache", "bin"), []byte("x"), 0o755)
	os.Chmod(filepath.Join(src, "c", "sub"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "c", "sub"), 0o755) })

	var buf bytes.Buffer
	ws, err := Write(context.Background(), &buf, src, WriteOptions{Exclude: DefaultExcludes})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Files != 1 || ws.HardLinks != 1 || ws.Symlinks != 1 || ws.Bytes != 4 {
		t.Fatalf("write summary %+v", ws)
	}
	dst := filepath.Join(t.TempDir(), "x")
	if _, err := Extract(context.Background(), &buf, dst, ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dst, "c", "sub"), 0o755) })
	fi, err := os.Stat(filepath.Join(dst, "c", "sub"))
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("dir mode %v %v", fi.Mode(), err)
	}
	a, _ := os.Stat(filepath.Join(dst, "c", "sub", "f"))
	b, _ := os.Stat(filepath.Join(dst, "c", "hard"))
	if !os.SameFile(a, b) || a.Mode().Perm() != 0o640 {
		t.Fatalf("hard link not restored or mode %v", a.Mode())
	}
	if _, err := os.Stat(filepath.Join(dst, "installercache")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("installercache was written")
	}
}

func TestExtract_RefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644)
	_, err := Extract(context.Background(), bytes.NewReader(tarOf(tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 1})), dir, ExtractOptions{})
	if !errors.Is(err, ErrDirNotEmpty) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Fatal("Extract touched an existing file")
	}
}
