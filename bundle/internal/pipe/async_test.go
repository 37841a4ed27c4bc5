package pipe

import (
	"bytes"
	"encoding/binary"
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

// Fill writes in place, in order with Write, never splitting a fill across
// two buffers; a fill larger than a buffer is refused; dst's error reaches
// Fill; and Fill after Close is refused.
func TestAsyncWriterFill(t *testing.T) {
	var want bytes.Buffer
	dst := &recordWrites{}
	w := NewAsyncWriter(dst, 1000, 3)
	if w.FillMax() != 1000 {
		t.Fatalf("FillMax = %d, want the buffer size 1000", w.FillMax())
	}
	fills := map[string]bool{}
	for i := range 3000 {
		// Each piece unique: its number, then filler.
		p := binary.LittleEndian.AppendUint32(nil, uint32(i))
		p = append(p, bytes.Repeat([]byte{byte(i)}, i%990)...)
		want.Write(p)
		if i%3 == 0 {
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fills[string(p)] = true
		err := w.Fill(len(p), func(b []byte) {
			if len(b) != len(p) {
				t.Fatalf("fill of %d bytes given %d", len(p), len(b))
			}
			copy(b, p)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Fill(1001, func([]byte) { t.Fatal("a fill larger than a buffer was run") }); err == nil {
		t.Fatal("a fill larger than a buffer was taken")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst.all.Bytes(), want.Bytes()) {
		t.Fatal("bytes out of order or lost")
	}
	// Every filled piece lies whole in one of dst's writes.
	for p := range fills {
		found := false
		for _, wr := range dst.writes {
			if bytes.Contains(wr, []byte(p)) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("a fill of %d bytes was split across buffers", len(p))
		}
	}
	if err := w.Fill(1, func([]byte) {}); !errors.Is(err, errClosed) {
		t.Fatalf("Fill after Close: %v, want %v", err, errClosed)
	}
	// dst's error reaches Fill.
	w = NewAsyncWriter(&failAfter{n: 2500}, 1000, 2)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = w.Fill(500, func(b []byte) { clear(b) })
	}
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("Fill after dst failed: %v, want disk full", err)
	}
	_ = w.Close()
}

// recordWrites keeps each write it is given, and all of them in order.
type recordWrites struct {
	all    bytes.Buffer
	writes [][]byte
}

func (r *recordWrites) Write(p []byte) (int, error) {
	r.all.Write(p)
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}
