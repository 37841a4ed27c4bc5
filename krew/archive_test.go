package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// twoMembers writes a fake binary and license into dir with the given on-disk
// mode and mtime, which the archive must not record.
func twoMembers(t *testing.T, dir string, diskMode os.FileMode, diskTime time.Time) []member {
	t.Helper()
	bin := filepath.Join(dir, "kubectl-assisted")
	lic := filepath.Join(dir, "LICENSE")
	for p, data := range map[string]string{bin: "\x7fELF binary bytes", lic: "Apache License\n"} {
		if err := os.WriteFile(p, []byte(data), diskMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, diskMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, diskTime, diskTime); err != nil {
			t.Fatal(err)
		}
	}
	return []member{{Name: "kubectl-assisted", Path: bin, Mode: 0o755}, {Name: "LICENSE", Path: lic, Mode: 0o644}}
}

func TestWriteArchive_ByteIdenticalWhateverTheDisk(t *testing.T) {
	mtime := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, ext := range []string{".tar.gz", ".zip"} {
		t.Run(ext, func(t *testing.T) {
			a := twoMembers(t, t.TempDir(), 0o600, time.Now())
			b := twoMembers(t, t.TempDir(), 0o777, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
			out := t.TempDir()
			sumA, err := writeArchive(filepath.Join(out, "a"+ext), a, mtime)
			if err != nil {
				t.Fatal(err)
			}
			sumB, err := writeArchive(filepath.Join(out, "b"+ext), b, mtime)
			if err != nil {
				t.Fatal(err)
			}
			da, _ := os.ReadFile(filepath.Join(out, "a"+ext))
			db, _ := os.ReadFile(filepath.Join(out, "b"+ext))
			if sumA != sumB || !bytes.Equal(da, db) {
				t.Fatalf("archives of equal contents differ: %s vs %s", sumA, sumB)
			}
			if len(sumA) != 64 || sumA != lower(sumA) {
				t.Fatalf("sha256 %q is not 64 lowercase hex digits", sumA)
			}
			// A later mtime changes the bytes: the time is recorded, not ignored.
			sumC, err := writeArchive(filepath.Join(out, "c"+ext), a, mtime.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if sumC == sumA {
				t.Fatal("mtime does not reach the archive")
			}
		})
	}
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }

func TestWriteArchive_TarGzHeaders(t *testing.T) {
	mtime := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "x.tar.gz")
	if _, err := writeArchive(file, twoMembers(t, t.TempDir(), 0o640, time.Now()), mtime); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() || gz.OS != 255 {
		t.Fatalf("gzip header name=%q mtime=%v os=%d, want no name, no time, OS unknown", gz.Name, gz.ModTime, gz.OS)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Name == "kubectl-assisted" {
			wantMode = 0o755
		}
		if h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" ||
			!h.ModTime.Equal(mtime) || h.Typeflag != tar.TypeReg || h.Format != tar.FormatUSTAR {
			t.Errorf("%s: mode %o uid %d gid %d uname %q gname %q mtime %v type %c format %v",
				h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, h.Typeflag, h.Format)
		}
	}
	if len(names) != 2 || names[0] != "kubectl-assisted" || names[1] != "LICENSE" {
		t.Fatalf("members %v, want [kubectl-assisted LICENSE]", names)
	}
}

func TestWriteArchive_ZipHeaders(t *testing.T) {
	mtime := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "x.zip")
	if _, err := writeArchive(file, twoMembers(t, t.TempDir(), 0o600, time.Now()), mtime); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 2 || zr.File[0].Name != "kubectl-assisted" || zr.File[1].Name != "LICENSE" {
		t.Fatalf("members %v", zr.File)
	}
	for _, f := range zr.File {
		wantMode := os.FileMode(0o644)
		if f.Name == "kubectl-assisted" {
			wantMode = 0o755
		}
		if f.Mode().Perm() != wantMode || !f.Modified.Equal(mtime) || f.Method != zip.Deflate {
			t.Errorf("%s: mode %v modified %v method %d", f.Name, f.Mode(), f.Modified, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil { // checks the CRC
			t.Errorf("%s: %v", f.Name, err)
		}
		rc.Close()
	}
}

func TestWriteArchive_FailsCleanly(t *testing.T) {
	dir := t.TempDir()
	missing := []member{{Name: "kubectl-assisted", Path: filepath.Join(dir, "nope"), Mode: 0o755}}
	if _, err := writeArchive(filepath.Join(dir, "x.tar.gz"), missing, time.Unix(0, 0)); err == nil {
		t.Fatal("archive of a missing file succeeded")
	}
	if _, err := writeArchive(filepath.Join(dir, "x.rar"), nil, time.Unix(0, 0)); err == nil {
		t.Fatal("unknown archive format succeeded")
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Fatalf("failed writes left files behind: %v", left)
	}
}
