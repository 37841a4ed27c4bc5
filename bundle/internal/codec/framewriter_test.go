package codec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// framesInput is log-like text with stretches of random bytes, longer than
// several frames.
func framesInput(n int) []byte {
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	var b bytes.Buffer
	for b.Len() < n {
		if rng.IntN(32) == 0 {
			r := make([]byte, rng.IntN(300<<10))
			for i := range r {
				r[i] = byte(rng.Uint32())
			}
			b.Write(r)
			continue
		}
		for range 200 {
			b.WriteString("time=2026-12-03T14:00:00Z level=info msg=\"host status\" host=")
			b.WriteString(string(rune('a' + rng.IntN(26))))
			b.WriteString(" progress=")
			b.WriteByte(byte('0' + rng.IntN(10)))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()[:n]
}

// encodeFrames writes in through a frameEncoder in writes of varying size,
// with a Flush and bytes written straight to the output (as a raw frame is)
// at flushAt.
func encodeFrames(t *testing.T, in []byte, flushAt int, direct []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	e, err := newFrameEncoder(&out, encoderOptions(zstd.SpeedFastest)...)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for off := 0; off < len(in); {
		n := min(len(in)-off, 1+rng.IntN(700<<10))
		if off < flushAt && off+n > flushAt {
			n = flushAt - off
		}
		if _, err := e.Write(in[off : off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
		if off == flushAt {
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			out.Write(direct)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func decodeAll(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxWindow(maxDecoderWindow))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFrameEncoder_DecodesAsOneStream(t *testing.T) {
	in := framesInput(9<<20 + 12345)
	// A raw frame between two compressed runs, as StoreRaw writes one.
	var raw bytes.Buffer
	rf := &rawFrame{out: &raw}
	if _, err := rf.Write([]byte("stored bytes")); err != nil {
		t.Fatal(err)
	}
	if err := rf.finish(); err != nil {
		t.Fatal(err)
	}
	flushAt := 5<<20 + 777
	out := encodeFrames(t, in, flushAt, raw.Bytes())
	want := append(append(append([]byte{}, in[:flushAt]...), "stored bytes"...), in[flushAt:]...)
	if got := decodeAll(t, out); !bytes.Equal(got, want) {
		t.Fatalf("decoded %d bytes, want %d (equal: %v)", len(got), len(want), bytes.Equal(got, want))
	}
	if len(out) >= len(in)/2 {
		t.Fatalf("%d bytes of mostly text compressed to %d", len(in), len(out))
	}
}

// The frames depend on the input alone: the same bytes whatever the number
// of goroutines, so unencrypted bundles keep equal digests across machines.
func TestFrameEncoder_SameBytesWhateverTheCores(t *testing.T) {
	in := framesInput(7<<20 + 3)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	one := encodeFrames(t, in, 3<<20, nil)
	runtime.GOMAXPROCS(4)
	four := encodeFrames(t, in, 3<<20, nil)
	if !bytes.Equal(one, four) {
		t.Fatalf("1 goroutine wrote %d bytes, 4 wrote %d, or other bytes", len(one), len(four))
	}
	// And the stream is the frames of frameInput-byte pieces (3 MiB, then
	// the rest from the flush on), each one zstd frame on its own.
	enc, err := zstd.NewWriter(nil, encoderOptions(zstd.SpeedFastest)...)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, part := range [][]byte{in[:3<<20], in[3<<20:]} {
		for len(part) > 0 {
			n := min(len(part), frameInput)
			want = enc.EncodeAll(part[:n], want)
			part = part[n:]
		}
	}
	if !bytes.Equal(one, want) {
		t.Fatalf("the stream (%d bytes) is not the frames of %d-byte pieces (%d bytes)", len(one), frameInput, len(want))
	}
}

type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	f.n--
	return len(p), nil
}

// An output error reaches Write or Close, and nothing waits forever.
func TestFrameEncoder_OutputErrorReturns(t *testing.T) {
	boom := errors.New("disk full")
	e, err := newFrameEncoder(&failAfter{n: 1, err: boom}, encoderOptions(zstd.SpeedFastest)...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		in := framesInput(20 << 20)
		_, werr := e.Write(in)
		ferr := e.Flush()
		cerr := e.Close()
		done <- errors.Join(werr, ferr, cerr)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want the output's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the encoder hung after its output failed")
	}
}
