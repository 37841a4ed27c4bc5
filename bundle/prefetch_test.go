package bundle

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

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
			p := newPrefetcher(tc.src, nil)
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
	// onErr names the root cause, and drainErr returns it.
	p := newPrefetcher(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), func(err error) error {
		return &IntegrityError{Blob: "x", Reason: ReasonDigest, Got: err.Error()}
	})
	var ie *IntegrityError
	if err := p.drainErr(); !errors.As(err, &ie) {
		t.Fatalf("drainErr: %v, want the root cause", err)
	}
	p.Close(nil)
}

// Close returns while the reading goroutine waits for a free buffer or for
// its source.
func TestPrefetcherClose(t *testing.T) {
	p := newPrefetcher(bytes.NewReader(make([]byte, 10*prefetchSize)), nil)
	p.Close(nil) // the goroutine is blocked on a full ring
	pr, pw := io.Pipe()
	p = newPrefetcher(pr, nil)
	p.Close(func() error { return pw.CloseWithError(errors.New("closed")) })
}
