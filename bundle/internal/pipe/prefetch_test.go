package pipe

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"
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

// verdict stands for a check's error at the end of a stream (bundle: the
// blob's *IntegrityError when its digest differs).
type verdict struct{ sum [32]byte }

func (v *verdict) Error() string { return "verdict" }

// sumTap hashes what it sees and, at the end, fails the stream unless the
// sum is want: what the bundle's verifier does as a Tap.
func sumTap(want [32]byte, seen *bytes.Buffer) Tap {
	h := sha256.New()
	var final error
	return func(b []byte, err error) error {
		if final != nil {
			return final
		}
		h.Write(b)
		seen.Write(b)
		if errors.Is(err, io.EOF) {
			var got [32]byte
			h.Sum(got[:0])
			final = io.EOF
			if got != want {
				final = &verdict{sum: got}
			}
			return final
		}
		return err
	}
}

func TestTappedPrefetcherTapsEveryByteInOrder(t *testing.T) {
	data := make([]byte, 3*prefetchSize+12345)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  io.Reader
		want [32]byte
		err  func(error) bool
	}{
		{"verified end", iotest.HalfReader(bytes.NewReader(data)), sha256.Sum256(data), func(err error) bool { return err == nil }},
		{"end that does not verify", bytes.NewReader(data), sha256.Sum256([]byte("other")), func(err error) bool {
			var v *verdict
			return errors.As(err, &v) && v.sum == sha256.Sum256(data)
		}},
		{"source error", io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), sha256.Sum256(data), func(err error) bool { return errors.Is(err, boom) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen bytes.Buffer
			p := NewTappedPrefetcher(tc.src, sumTap(tc.want, &seen), nil, nil, prefetchSize)
			defer p.Close(nil)
			got, err := readInSteps(p, 1000)
			if !tc.err(err) {
				t.Fatalf("error %v", err)
			}
			if !bytes.Equal(got, data) || !bytes.Equal(seen.Bytes(), data) {
				t.Fatalf("read %d bytes and tapped %d, want %d, in order", len(got), seen.Len(), len(data))
			}
		})
	}
}

// The tap's goroutine is not the reads': while the tap holds the first
// buffer, the source is read for the next ones.
func TestTappedPrefetcherReadsWhileTheTapWorks(t *testing.T) {
	release := make(chan struct{})
	reads := make(chan int, 16)
	src := readFunc(func(p []byte) (int, error) {
		reads <- len(p)
		return len(p), nil
	})
	first := true
	p := NewTappedPrefetcher(src, func(b []byte, err error) error {
		if first {
			first = false
			<-release
		}
		return err
	}, nil, nil, prefetchSize)
	for i := 0; i < 2; i++ {
		select {
		case <-reads:
		case <-time.After(10 * time.Second):
			t.Fatalf("the source was read %d times while the tap held the first buffer, want 2", i)
		}
	}
	close(release)
	if _, err := p.NextBatch(); err != nil {
		t.Fatal(err)
	}
	p.Close(nil)
}

// The tap's error ends the stream, onErr names its root cause, and a tap
// that gives no verdict at the end leaves the end an end.
func TestTappedPrefetcherErrors(t *testing.T) {
	data := make([]byte, 2*prefetchSize)
	tooLong := errors.New("more bytes than the descriptor says")
	n := 0
	p := NewTappedPrefetcher(bytes.NewReader(data), func(b []byte, err error) error {
		if n += len(b); n > prefetchSize {
			return tooLong
		}
		return err
	}, func(err error) error { return &rootCause{err: err} }, nil, prefetchSize)
	var rc *rootCause
	if err := p.DrainErr(); !errors.As(err, &rc) || !errors.Is(rc.err, tooLong) {
		t.Fatalf("DrainErr: %v, want the tap's error as its root cause", err)
	}
	p.Close(nil)

	p = NewTappedPrefetcher(bytes.NewReader(data), func([]byte, error) error { return nil }, nil, nil, prefetchSize)
	got, err := readInSteps(p, 4096)
	if err != nil || len(got) != len(data) {
		t.Fatalf("read %d bytes, %v; want %d and the end", len(got), err, len(data))
	}
	p.Close(nil)
}

// Close returns while either goroutine waits (the reads on their source or
// on a free buffer, the tap on a full ring), and the buffers come back.
func TestTappedPrefetcherClose(t *testing.T) {
	pass := func(_ []byte, err error) error { return err }
	p := NewTappedPrefetcher(bytes.NewReader(make([]byte, 10*prefetchSize)), pass, nil, nil, prefetchSize)
	for deadline := time.Now().Add(10 * time.Second); len(p.full) < PrefetchBuffers; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ring did not fill")
		}
	}
	p.Close(nil)
	if got := len(p.Release()); got != PrefetchBuffers {
		t.Fatalf("Release gave %d buffers back, want %d", got, PrefetchBuffers)
	}
	pr, pw := io.Pipe()
	p = NewTappedPrefetcher(pr, pass, nil, nil, prefetchSize)
	p.Close(func() error { return pw.CloseWithError(errors.New("closed")) })
	block := make(chan struct{})
	p = NewTappedPrefetcher(bytes.NewReader(make([]byte, 10*prefetchSize)), func(_ []byte, err error) error {
		<-block
		return err
	}, nil, nil, prefetchSize)
	go func() { time.Sleep(10 * time.Millisecond); close(block) }()
	p.Close(nil)
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
