package pipe

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// A FileWriter given writes of any size writes the file whole and in
// order, in pieces that end on multiples of FileWriteSize (but the last).
func TestFileWriterAligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &FileWriter{F: f}
	var want bytes.Buffer
	for i := range 200 {
		p := make([]byte, rng.IntN(3*FileWriteSize)+1)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if i == 0 {
			p = p[:213] // an age header's worth: every later write starts unaligned
		}
		want.Write(p)
		if n, err := w.Write(p); err != nil || n != len(p) {
			t.Fatalf("write %d: %d, %v", len(p), n, err)
		}
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the file is not what was written")
	}
	for _, c := range []struct {
		off     int64
		n, want int
	}{
		{0, 100, 100},
		{0, 3 * FileWriteSize, FileWriteSize},
		{213, 3 * FileWriteSize, FileWriteSize - 213},
		{FileWriteSize - 1, 10, 1},
		{5*FileWriteSize + 7, FileWriteSize, FileWriteSize - 7},
	} {
		if got := alignedCut(c.off, c.n); got != c.want {
			t.Errorf("alignedCut(%d, %d) = %d, want %d", c.off, c.n, got, c.want)
		}
	}
}
