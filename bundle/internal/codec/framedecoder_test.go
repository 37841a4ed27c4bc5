package codec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// streamDecode is the reference: klauspost's streaming decoder over the
// whole stream, as layers were read before frameDecoder.
func streamDecode(in []byte) ([]byte, error) {
	zr, err := zstd.NewReader(bytes.NewReader(in), zstd.WithDecoderMaxWindow(maxDecoderWindow), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// frameDecode reads in through a frameDecoder, fed by src (in when nil).
func frameDecode(t testing.TB, d *frameDecoder, in []byte, src io.Reader) ([]byte, error) {
	t.Helper()
	if src == nil {
		src = bytes.NewReader(in)
	}
	d.Reset(src)
	out, err := io.ReadAll(d)
	d.Stop()
	return out, err
}

// lentSource is r behind a prefetcher of buffers of size bytes, which the
// frame decoder takes its raw blocks from without a copy; the test closes it.
func lentSource(t testing.TB, r io.Reader, size int) *pipe.Prefetcher {
	p := pipe.NewPrefetcher(r, nil, nil, size)
	t.Cleanup(func() { p.Close(nil) })
	return p
}

// encodeWith writes in with one klauspost streaming encoder.
func encodeWith(t testing.TB, in []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := zstd.NewWriter(&b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawFrames writes in as frames of raw blocks, as StoreRaw does.
func rawFrames(t testing.TB, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range parts {
		f := &rawFrame{out: &b}
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := f.finish(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// mixedInput has incompressible stretches followed by text that repeats
// them, so that an encoder with a small window writes raw blocks and then
// compressed blocks that refer back into them.
func mixedInput() []byte {
	r := randomBytes(300<<10, 3)
	var b bytes.Buffer
	b.Write(r)
	b.Write(r[len(r)-100<<10:]) // a match inside a 128 KiB window
	b.Write(framesInput(500 << 10))
	b.Write(randomBytes(200<<10, 4))
	return b.Bytes()
}

// decodeCases are streams of every kind frameDecoder tells apart: frames it
// decodes whole, raw frames it passes without a decoder, raw frames that
// turn compressed, frames without a content size, with a checksum or
// without, a dictionary-free skippable frame, and concatenations of them.
func decodeCases(t testing.TB) map[string][]byte {
	text := framesInput(9 << 20)
	mixed := mixedInput()
	frames := encodeFrames(t.(*testing.T), text, 5<<20, rawFrames(t, randomBytes(700<<10, 5)))
	small := encodeWith(t, mixed, zstd.WithWindowSize(128<<10), zstd.WithEncoderCRC(false), zstd.WithEncoderLevel(zstd.SpeedFastest))
	skippable := append([]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, frames[:0]...)
	return map[string][]byte{
		"empty":                nil,
		"frame encoder":        frames,
		"raw frames":           rawFrames(t, randomBytes(3<<20, 6), nil, randomBytes(10, 7), randomBytes(128<<10, 8)),
		"raw then frames":      append(rawFrames(t, randomBytes(1<<20, 9)), frames...),
		"one stream, default":  encodeWith(t, mixed),
		"one stream, no crc":   encodeWith(t, mixed, zstd.WithEncoderCRC(false)),
		"small window, no crc": small,
		"small window, twice":  append(append([]byte{}, small...), small...),
		"small window, crc":    encodeWith(t, mixed, zstd.WithWindowSize(128<<10), zstd.WithEncoderLevel(zstd.SpeedFastest)),
		"large frame with fcs": func() []byte {
			var b bytes.Buffer
			zw, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			b.Write(zw.EncodeAll(text, nil))
			return b.Bytes()
		}(),
		"skippable then frames": append(skippable, frames...),
		"frames then garbage":   append(append([]byte{}, frames...), 1, 2, 3, 4, 5, 6, 7),
		"not zstd":              []byte("plain text, not a zstd stream at all"),
	}
}

// TestFrameDecoderMatchesStreamDecoder: for every kind of stream, whole and
// cut at many points, frameDecoder gives exactly what klauspost's streaming
// decoder gives, and fails where it fails.
func TestFrameDecoderMatchesStreamDecoder(t *testing.T) {
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, in := range decodeCases(t) {
		want, wantErr := streamDecode(in)
		for _, cut := range []int{len(in), len(in) - 1, len(in) - 4, len(in) / 2, len(in) / 3, 7, 5, 3} {
			if cut < 0 || cut > len(in) {
				continue
			}
			want, wantErr := want, wantErr
			if cut < len(in) {
				want, wantErr = streamDecode(in[:cut])
			}
			for _, src := range []struct {
				what string
				r    io.Reader
			}{{"whole", nil}, {"one byte at a time", iotest.OneByteReader(bytes.NewReader(in[:cut]))}, {"half reads", iotest.HalfReader(bytes.NewReader(in[:cut]))},
				{"lent from 1 MiB buffers", lentSource(t, bytes.NewReader(in[:cut]), prefetchSize)},
				{"lent from 130 KiB buffers, half reads below", lentSource(t, iotest.HalfReader(bytes.NewReader(in[:cut])), 130<<10)}} {
				if src.what == "one byte at a time" && cut > 1<<20 {
					continue
				}
				got, gotErr := frameDecode(t, d, in[:cut], src.r)
				if (gotErr != nil) != (wantErr != nil) {
					t.Fatalf("%s, cut at %d of %d, %s: error %v, the stream decoder's %v", name, cut, len(in), src.what, gotErr, wantErr)
				}
				if wantErr == nil && !bytes.Equal(got, want) {
					t.Fatalf("%s, cut at %d of %d, %s: %d bytes differ from the stream decoder's %d", name, cut, len(in), src.what, len(got), len(want))
				}
			}
		}
	}
}

// TestFrameDecoderPassesRawBlocks: the raw frames of StoreRaw and the
// small-window stream whose raw blocks turn compressed are decoded right,
// and the first really does take the pass-through path (no decoder).
func TestFrameDecoderPassesRawBlocks(t *testing.T) {
	raw := randomBytes(2<<20+5, 11)
	in := rawFrames(t, raw)
	fr := &frameReader{src: bytes.NewReader(in)}
	var buf []byte
	if _, err := fr.next(&buf); err != nil {
		t.Fatal(err)
	}
	if fr.window != 128<<10 || fr.fast {
		t.Fatalf("a raw frame is read with window %d, fast %v; want a pass-through window of 128 KiB", fr.window, fr.fast)
	}
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := frameDecode(t, d, in, nil)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("raw frame: %d bytes, %v", len(got), err)
	}
	// Lent: every byte handed out lies in the source's buffers, and every
	// buffer is free again once the stream is read.
	p := lentSource(t, bytes.NewReader(in), prefetchSize)
	d.Reset(p)
	var lent []byte
	var pieces [][]byte
	for {
		b, err := d.next(1 << 20)
		if err == io.EOF { //nolint:errorlint // next's own
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, b)
		lent = append(lent, b...)
	}
	d.Stop()
	if !bytes.Equal(lent, raw) {
		t.Fatalf("raw frame, lent: %d bytes of %d", len(lent), len(raw))
	}
	p.Close(nil)
	bufs := p.Release()
	if len(bufs) != pipe.PrefetchBuffers {
		t.Fatal("a lent buffer was not released")
	}
	for _, b := range pieces {
		if !withinBuffers(bufs, b) {
			t.Fatal("raw content handed out from a buffer of the decoder's, not the source's")
		}
	}
	// Raw blocks, then compressed blocks that match into them.
	mixed := mixedInput()
	small := encodeWith(t, mixed, zstd.WithWindowSize(128<<10), zstd.WithEncoderCRC(false), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if !hasRawThenCompressed(t, small) {
		t.Fatal("the small-window stream does not start with raw blocks followed by a compressed one: the test does not test the hand-over")
	}
	got, err = frameDecode(t, d, small, nil)
	if err != nil || !bytes.Equal(got, mixed) {
		t.Fatalf("raw blocks then compressed ones: %d bytes of %d, %v", len(got), len(mixed), err)
	}
}

// withinBuffers tells whether b lies in one of the buffers (those of the
// source, which it released once closed: every one of them, checked above).
func withinBuffers(bufs [][]byte, b []byte) bool {
	for _, x := range bufs {
		if overlaps(x, b) {
			return true
		}
	}
	return false
}

func overlaps(buf, b []byte) bool {
	if len(b) == 0 || len(buf) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= start && at+uintptr(len(b)) <= start+uintptr(cap(buf))
}

// hasRawThenCompressed walks the first frame's block headers.
func hasRawThenCompressed(t *testing.T, in []byte) bool {
	var h zstd.Header
	if err := h.Decode(in); err != nil {
		t.Fatal(err)
	}
	sawRaw := false
	for off := h.HeaderSize; off+3 <= len(in); {
		bh := uint32(in[off]) | uint32(in[off+1])<<8 | uint32(in[off+2])<<16
		typ, size := (bh>>1)&3, int(bh>>3)
		switch typ {
		case 0:
			sawRaw = true
		case 2:
			return sawRaw
		}
		if typ == 1 {
			size = 1
		}
		off += 3 + size
		if bh&1 != 0 {
			return false
		}
	}
	return false
}

// TestFrameDecoderAlteredFrames: a frame altered in its content, its
// checksum or its content size fails (as the stream decoder does) and never
// yields the altered plaintext as good.
func TestFrameDecoderAlteredFrames(t *testing.T) {
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := encodeFrames(t, framesInput(5<<20), -1, nil)
	rng := rand.New(rand.NewPCG(5, 5))
	failed := 0
	for range 200 {
		bad := bytes.Clone(in)
		i := rng.IntN(len(bad))
		bad[i] ^= byte(1 + rng.IntN(255))
		_, wantErr := streamDecode(bad)
		got, gotErr := frameDecode(t, d, bad, nil)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("byte %d altered: error %v, the stream decoder's %v", i, gotErr, wantErr)
		}
		if gotErr != nil {
			failed++
		} else if want, _ := streamDecode(bad); !bytes.Equal(got, want) {
			t.Fatalf("byte %d altered: the output differs from the stream decoder's", i)
		}
	}
	if failed == 0 {
		t.Fatal("no alteration failed: the checksums are not checked")
	}
}

// TestFrameDecoderStopMidStream: stopping (or closing) a decoder in the
// middle of a stream, with frames in flight, returns and leaves it usable.
func TestFrameDecoderStopMidStream(t *testing.T) {
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	text := framesInput(12 << 20)
	in := encodeFrames(t, text, -1, nil)
	for _, n := range []int{0, 1, 3 << 20, 7 << 20} {
		d.Reset(bytes.NewReader(in))
		if _, err := io.CopyN(io.Discard, d, int64(n)); err != nil {
			t.Fatal(err)
		}
		d.Stop()
	}
	got, err := frameDecode(t, d, in, nil)
	if err != nil || !bytes.Equal(got, text) {
		t.Fatalf("after stops: %d bytes, %v", len(got), err)
	}
	d.Reset(bytes.NewReader(in))
	if _, err := io.CopyN(io.Discard, d, 1<<20); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// TestFrameDecoderSourceError: the source's own error comes out as is.
func TestFrameDecoderSourceError(t *testing.T) {
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	boom := errors.New("boom")
	for name, in := range map[string][]byte{"frames": encodeFrames(t, framesInput(5<<20), -1, nil), "raw": rawFrames(t, randomBytes(3<<20, 1))} {
		for _, cut := range []int{0, 4, 100, len(in) / 2, len(in)} {
			_, err := frameDecode(t, d, nil, io.MultiReader(bytes.NewReader(in[:cut]), iotest.ErrReader(boom)))
			if !errors.Is(err, boom) {
				t.Fatalf("%s, source failing after %d bytes: %v, want the source's error", name, cut, err)
			}
		}
	}
}

// FuzzFrameDecoder: on any input frameDecoder and the stream decoder agree
// on success and output.
func FuzzFrameDecoder(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it finds.
	f.Add(rawFrames(f, randomBytes(300, 1), randomBytes(3000, 2)))
	r := randomBytes(2500, 3)
	f.Add(encodeWith(f, append(append(r, r[len(r)-900:len(r)-700]...), framesInput(2000)...), zstd.WithWindowSize(1<<10), zstd.WithEncoderCRC(false), zstd.WithEncoderLevel(zstd.SpeedFastest)))
	var fe bytes.Buffer
	e, _ := newFrameEncoder(&fe, encoderOptions(zstd.SpeedFastest)...)
	e.Write(framesInput(20 << 10))
	e.Close()
	f.Add(fe.Bytes())
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 0x01, 0x00, 0x00})
	d, err := newFrameDecoder()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := streamDecode(in)
		got, gotErr := frameDecode(t, d, in, nil)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("error %v, the stream decoder's %v", gotErr, wantErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%d bytes differ from the stream decoder's %d", len(got), len(want))
		}
		p := pipe.NewPrefetcher(iotest.HalfReader(bytes.NewReader(in)), nil, nil, 1<<10+int(len(in)%3000))
		got, gotErr = frameDecode(t, d, in, p)
		p.Close(nil)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("lent: error %v, the stream decoder's %v", gotErr, wantErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("lent: %d bytes differ from the stream decoder's %d", len(got), len(want))
		}
	})
}

// TestFrameDecoderHandOverWindow: compressed blocks that match as far back
// as the window reaches, after raw blocks spread over several pieces, decode
// right: the hand-over keeps the whole window and no more.
func TestFrameDecoderHandOverWindow(t *testing.T) {
	d, err := newFrameDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, window := range []int{1 << 10, 128 << 10} {
		for _, dist := range []int{window, window - 1, window / 2} {
			prefix := randomBytes(3*streamPiece+12345, uint64(dist))
			in := append(bytes.Clone(prefix), prefix[len(prefix)-dist:][:min(dist, 300)]...)
			in = append(in, framesInput(64<<10)...)
			enc := encodeWith(t, in, zstd.WithWindowSize(window), zstd.WithEncoderCRC(false), zstd.WithEncoderLevel(zstd.SpeedFastest))
			if !hasRawThenCompressed(t, enc) {
				t.Fatalf("window %d, distance %d: no raw blocks then a compressed one", window, dist)
			}
			got, err := frameDecode(t, d, enc, nil)
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("window %d, match at distance %d: %d bytes of %d, %v", window, dist, len(got), len(in), err)
			}
			for _, size := range []int{prefetchSize, 130 << 10} {
				got, err := frameDecode(t, d, enc, lentSource(t, iotest.HalfReader(bytes.NewReader(enc)), size))
				if err != nil || !bytes.Equal(got, in) {
					t.Fatalf("window %d, match at distance %d, lent from %d-byte buffers: %d bytes of %d, %v", window, dist, size, len(got), len(in), err)
				}
			}
		}
	}
}

// TestKeepWindow: the window kept is the last window bytes of all that was
// handed out, whatever the sizes of the pieces.
func TestKeepWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, window := range []int{1, 7, 1024} {
		var all, hist []byte
		for range 300 {
			b := randomBytes(rng.IntN(3*window), rng.Uint64())
			all = append(all, b...)
			hist = keepWindow(hist, b, window)
			want := all[max(0, len(all)-window):]
			if !bytes.Equal(hist, want) {
				t.Fatalf("window %d after %d bytes: kept %d bytes, want the last %d", window, len(all), len(hist), len(want))
			}
		}
	}
}
