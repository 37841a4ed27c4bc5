package pipe

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

const prefetchSize = 1 << 20

// rootCause stands for the error a caller's onErr names as the cause of a
// read failure (bundle: the blob's *IntegrityError).
type rootCause struct{ err error }

func (e *rootCause) Error() string { return "root cause: " + e.err.Error() }

func TestPrefetcherOrderAndErrors(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*prefetchSize+5)/16)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  io.Reader
		want error
	}{
		{"eof", iotest.HalfReader(bytes.NewReader(data)), nil},
		{"error after data", io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPrefetcher(tc.src, nil, nil, prefetchSize)
			defer p.Close(nil)
			got, err := readInSteps(p, 1000)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, want %d in order", len(got), len(data))
			}
		})
	}
	// onErr names the root cause, and DrainErr returns it.
	p := NewPrefetcher(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), func(err error) error {
		return &rootCause{err: err}
	}, nil, prefetchSize)
	var rc *rootCause
	if err := p.DrainErr(); !errors.As(err, &rc) {
		t.Fatalf("DrainErr: %v, want the root cause", err)
	}
	p.Close(nil)
}

// Close returns while the reading goroutine waits for a free buffer or for
// its source.
func TestPrefetcherClose(t *testing.T) {
	p := NewPrefetcher(bytes.NewReader(make([]byte, 10*prefetchSize)), nil, nil, prefetchSize)
	p.Close(nil) // the goroutine is blocked on a full ring
	pr, pw := io.Pipe()
	p = NewPrefetcher(pr, nil, nil, prefetchSize)
	p.Close(func() error { return pw.CloseWithError(errors.New("closed")) })
}

func readInSteps(r io.Reader, step int) ([]byte, error) {
	var out []byte
	buf := make([]byte, step)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
