package files

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The fingerprint changes with anything Write would store differently, and
// only then; excluded paths do not count.
func TestFingerprint(t *testing.T) {
	ctx := context.Background()
	d := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("c/a.txt", "hello")
	write("installercache/big", "x")
	fp := func() string {
		f, _, err := Fingerprint(ctx, d, DefaultExcludes)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	base := fp()
	if fp() != base {
		t.Fatal("fingerprint of an unchanged tree changed")
	}
	write("installercache/other", "y")
	if fp() != base {
		t.Fatal("a change in an excluded directory moved the fingerprint")
	}
	// Same size, mtime put back: the change time still tells.
	st, _ := os.Stat(filepath.Join(d, "c/a.txt"))
	time.Sleep(10 * time.Millisecond)
	write("c/a.txt", "HELLO")
	os.Chtimes(filepath.Join(d, "c/a.txt"), st.ModTime(), st.ModTime())
	if fp() == base {
		t.Fatal("content changed at the same size and mtime: fingerprint unchanged")
	}
	base = fp()
	os.Chmod(filepath.Join(d, "c/a.txt"), 0o600)
	if fp() == base {
		t.Fatal("mode change: fingerprint unchanged")
	}
	base = fp()
	write("c/new", "")
	if fp() == base {
		t.Fatal("new file: fingerprint unchanged")
	}
}

type hintRecorder struct {
	bytes.Buffer
	hints []bool
	at    []int
}

func (h *hintRecorder) StoreRaw(raw bool) error {
	h.hints = append(h.hints, raw)
	h.at = append(h.at, h.Len())
	return nil
}

// Write hints exactly the content of large compressed files, at its bounds.
func TestWriteRawHints(t *testing.T) {
	d := t.TempDir()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	zw.Write(bytes.Repeat([]byte{7}, MinRawSize))
	zw.Close()
	os.WriteFile(filepath.Join(d, "a.tar.gz"), gz.Bytes(), 0o644)
	os.WriteFile(filepath.Join(d, "b.gz"), gz.Bytes()[:100], 0o644)                         // compressed but small
	os.WriteFile(filepath.Join(d, "c.log"), bytes.Repeat([]byte("x"), MinRawSize+1), 0o644) // large, not compressed
	var out hintRecorder
	if _, err := Write(context.Background(), &out, d, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(out.hints) != 2 || !out.hints[0] || out.hints[1] {
		t.Fatalf("hints %v, want [true false] around a.tar.gz only", out.hints)
	}
	tr := tar.NewReader(bytes.NewReader(out.Bytes()))
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "a.tar.gz" {
		t.Fatalf("first entry %v %v", hdr, err)
	}
	// The raw span is exactly the file's content: it starts after the
	// header and ends where the content ends.
	span := out.Bytes()[out.at[0]:out.at[1]]
	if !bytes.Equal(span, gz.Bytes()) {
		t.Fatalf("raw span of %d bytes is not the file's %d bytes", len(span), gz.Len())
	}
	if _, err := io.Copy(io.Discard, tr); err != nil {
		t.Fatal(err)
	}
}
