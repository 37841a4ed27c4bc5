package pg

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// binaryCopy writes rows as COPY binary data (PostgreSQL's documentation,
// COPY, "Binary Format"): nil is NULL.
func binaryCopy(ext []byte, rows ...[][]byte) []byte {
	b := append([]byte{}, binarySignature...)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ext)))
	b = append(b, ext...)
	for _, r := range rows {
		b = binary.BigEndian.AppendUint16(b, uint16(len(r)))
		for _, f := range r {
			if f == nil {
				b = binary.BigEndian.AppendUint32(b, 0xffffffff)
				continue
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
	}
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

// countIn feeds data to a binaryRows in pieces cut at random.
func countIn(data []byte, seed uint64) int64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b binaryRows
	for len(data) > 0 {
		n := min(len(data), 1+rng.IntN(9))
		if seed == 0 {
			n = len(data)
		}
		b.write(data[:n])
		data = data[n:]
	}
	return b.count()
}

func TestBinaryRows(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 70000)
	good := map[string]struct {
		data []byte
		rows int64
	}{
		"no rows":            {binaryCopy(nil), 0},
		"rows":               {binaryCopy(nil, [][]byte{[]byte("1"), nil, []byte("")}, [][]byte{long, []byte("ab")}), 2},
		"zero-column rows":   {binaryCopy(nil, [][]byte{}, [][]byte{}, [][]byte{}), 3},
		"header extension":   {binaryCopy([]byte("extension"), [][]byte{[]byte("v")}), 1},
		"many":               {binaryCopy(nil, [][]byte{{0}}, [][]byte{{0}}, [][]byte{{0}}, [][]byte{{0}}), 4},
		"a field of -1 only": {binaryCopy(nil, [][]byte{nil}), 1},
	}
	for name, c := range good {
		for seed := uint64(0); seed < 20; seed++ {
			if got := countIn(c.data, seed); got != c.rows {
				t.Fatalf("%s, pieces %d: %d rows, want %d", name, seed, got, c.rows)
			}
		}
	}
	ok := binaryCopy(nil, [][]byte{[]byte("1"), []byte("two")})
	flags := func(f uint32) []byte {
		b := bytes.Clone(ok)
		binary.BigEndian.PutUint32(b[11:], f)
		return b
	}
	negative := bytes.Clone(ok)
	binary.BigEndian.PutUint32(negative[19+2:], 0xfffffffe) // a field length of -2
	bad := map[string][]byte{
		"empty":                nil,
		"text data":            []byte("1\tone\n"),
		"another signature":    append([]byte("PGCOPY\n\xff\r\n\x01"), ok[11:]...),
		"with OIDs":            flags(1 << 16),
		"a critical flag":      flags(1),
		"no trailer":           ok[:len(ok)-2],
		"cut in a field":       ok[:len(ok)-4],
		"cut in the header":    ok[:15],
		"data after the end":   append(bytes.Clone(ok), 0),
		"a negative length":    negative,
		"a negative row count": append(bytes.Clone(ok[:len(ok)-2]), 0xff, 0xfe, 0xff, 0xff),
	}
	for name, data := range bad {
		for seed := uint64(0); seed < 5; seed++ {
			if got := countIn(data, seed); got != -1 {
				t.Fatalf("%s, pieces %d: %d rows, want -1 (not well-framed)", name, seed, got)
			}
		}
	}
	// A backward-compatible flag (bits 17-31) is allowed.
	if got := countIn(flags(1<<20), 3); got != 1 {
		t.Fatalf("a compatible flag: %d rows, want 1", got)
	}
}

// FuzzBinaryRows: whatever the bytes, counting them whole or in pieces
// gives the same answer, and a well-framed stream re-framed from the count
// has that many rows.
func FuzzBinaryRows(f *testing.F) {
	f.Add(binaryCopy(nil, [][]byte{[]byte("1"), nil}), uint64(3))
	f.Add(binaryCopy([]byte("e"), [][]byte{}, [][]byte{{1, 2}}), uint64(9))
	f.Add([]byte("PGCOPY\n\xff\r\n\x00"), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		whole, pieces := countIn(data, 0), countIn(data, seed|1)
		if whole != pieces {
			t.Fatalf("whole: %d rows, in pieces: %d", whole, pieces)
		}
	})
}
