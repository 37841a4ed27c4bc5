package files

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func tarOf(entries ...tar.Header) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		tw.WriteHeader(&e)
		if e.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(e.Size)))
		}
	}
	tw.Close()
	return b.Bytes()
}

// FuzzExtract feeds arbitrary tars to Check and Extract: no panic, both agree,
// and nothing is ever written outside the extraction root.
func FuzzExtract(f *testing.F) {
	f.Add(tarOf(tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, tar.Header{Name: "a/f", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}))
	f.Add(tarOf(tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1}))
	f.Add(tarOf(tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, tar.Header{Name: "l/passwd", Typeflag: tar.TypeReg, Size: 1}))
	f.Add(tarOf(tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 1}, tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "f"}))
	f.Add(tarOf(tar.Header{Name: "s", Typeflag: tar.TypeSymlink, Linkname: "."}, tar.Header{Name: "t", Typeflag: tar.TypeSymlink, Linkname: "s/.."}))
	// One parent directory for the whole run (t.TempDir per input costs a
	// directory create and remove on top of the extraction's own); each input
	// extracts into parent/root, removed again after it.
	parent := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, checkErr := Check(context.Background(), bytes.NewReader(data))
		// A reader that lends its bytes (the layer reader) gets the same verdict.
		lentSum, lentErr := Check(context.Background(), &lender{data: data, step: 1 + len(data)%97})
		if (lentErr == nil) != (checkErr == nil) || (checkErr == nil && fmt.Sprint(*lentSum) != fmt.Sprint(*sum)) {
			t.Fatalf("Check from a lender: %v, %v; from a plain reader: %v, %v", lentSum, lentErr, sum, checkErr)
		}
		root := filepath.Join(parent, "root")
		defer os.RemoveAll(root)
		_, err := Extract(context.Background(), bytes.NewReader(data), root, ExtractOptions{})
		if (checkErr == nil) != (err == nil) && !os.IsPermission(err) {
			// Extract may fail on what Check accepts only for OS reasons.
			if _, isUnsafe := err.(*UnsafeEntryError); isUnsafe {
				t.Fatalf("Check accepted what Extract refused: %v", err)
			}
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.Name() != "root" {
				t.Fatalf("wrote %s outside the root", e.Name())
			}
		}
		if err != nil && len(entries) != 0 {
			t.Fatalf("failed extraction left %v (err %v)", entries, err)
		}
	})
}
