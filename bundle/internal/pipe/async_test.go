package pipe

import (
	"bytes"
	"errors"
	"testing"
)

type failAfter struct {
	bytes.Buffer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.Len()+len(p) > f.n {
		return 0, errors.New("disk full")
	}
	return f.Buffer.Write(p)
}

func TestAsyncWriterOrderAndErrors(t *testing.T) {
	var want bytes.Buffer
	dst := &failAfter{n: 1 << 30}
	w := NewAsyncWriter(dst, 1000, 3)
	for i := range 5000 {
		p := bytes.Repeat([]byte{byte(i)}, i%1700)
		want.Write(p)
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.Bytes(), want.Bytes()) {
		t.Fatal("bytes out of order or lost")
	}
	// dst's error reaches the writer, and Close.
	w = NewAsyncWriter(&failAfter{n: 5000}, 1000, 3)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = w.Write(make([]byte, 700))
	}
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("write error %v, want disk full", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failure returned nil")
	}
}
