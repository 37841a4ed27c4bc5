package pipe

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestCounting(t *testing.T) {
	var reported int64
	r := &CountingReader{R: strings.NewReader("hello, world"), OnRead: func(n int64) { reported += n }}
	var buf bytes.Buffer
	w := &CountingWriter{W: &buf}
	if _, err := io.Copy(w, io.LimitReader(r, 5)); err != nil {
		t.Fatal(err)
	}
	if r.N != 5 || reported != 5 || w.N != 5 || buf.String() != "hello" {
		t.Fatalf("read %d (reported %d), wrote %d %q; want 5, 5, 5 \"hello\"", r.N, reported, w.N, buf.String())
	}
	// Draining reads the rest as stored: not counted as read content.
	if err := r.DrainStored(); err != nil || r.N != 5 || reported != 5 {
		t.Fatalf("drain: %v, read %d, reported %d; want 5", err, r.N, reported)
	}
	if n, _ := r.R.Read(make([]byte, 1)); n != 0 {
		t.Fatal("DrainStored left bytes unread")
	}
}
