package codec

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
)

// A layer with raw segments (StoreRaw) decodes to exactly what was written,
// whatever the segment sizes around the 128 KiB block, encrypted or not.
func TestLayerWriterRawSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := bytes.Repeat([]byte("time=2025 level=info msg=\"host status\"\n"), 20000)
	id := newIdentity(t)
	type seg struct {
		raw  bool
		data []byte
	}
	for _, segs := range [][]seg{
		{{false, text}},
		{{true, random(rawBlockSize)}},
		{{false, text}, {true, random(rawBlockSize + 1)}, {false, text[:100]}},
		{{true, random(3*rawBlockSize - 1)}, {true, nil}, {true, random(10)}, {false, nil}, {false, text}},
		{{false, text[:10]}, {true, nil}, {false, text[:10]}},
		{{true, random(5)}},
	} {
		for _, encrypted := range []bool{false, true} {
			var rcpts []age.Recipient
			if encrypted {
				rcpts = []age.Recipient{id.Recipient()}
			}
			var out, want bytes.Buffer
			lw, err := NewLayerWriter(&out, rcpts, zstd.SpeedFastest)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range segs {
				if err := lw.StoreRaw(s.raw); err != nil {
					t.Fatal(err)
				}
				lw.Write(s.data)
				want.Write(s.data)
			}
			if err := lw.Close(); err != nil {
				t.Fatal(err)
			}
			var r io.Reader = &out
			if encrypted {
				if r, err = age.Decrypt(r, id); err != nil {
					t.Fatal(err)
				}
			}
			zr, err := zstd.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			zr.Close()
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("decoded %d bytes, want %d", len(got), want.Len())
			}
			if lw.raw != int64(want.Len()) {
				t.Fatalf("plain count %d, want %d", lw.raw, want.Len())
			}
		}
	}
}
