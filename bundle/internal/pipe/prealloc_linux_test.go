package pipe

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func allocated(t *testing.T, f *os.File) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// Preallocate reserves the blocks without moving the size, and truncating at
// the size a file has gives back what was reserved beyond it (what the
// spool's parts rely on: a part that compressed well keeps only its size).
func TestPreallocate_KeepsSizeAndTruncateGivesBack(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the test directory's filesystem has no fallocate: %v", err)
		}
		t.Skipf("the test directory's filesystem has no fallocate: %v", err)
	}
	const reserve = 8 << 20
	if err := Preallocate(f, reserve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 10000 {
		t.Fatalf("size %d after a write of 10000 bytes, want 10000 (FALLOC_FL_KEEP_SIZE)", fi.Size())
	}
	if a := allocated(t, f); a < reserve {
		t.Fatalf("%d bytes allocated after Preallocate(%d)", a, reserve)
	}
	if err := f.Truncate(fi.Size()); err != nil {
		t.Fatal(err)
	}
	if a := allocated(t, f); a > 64<<10 {
		t.Fatalf("%d bytes still allocated for a file of 10000 after the truncate", a)
	}
}

// A size of zero or less reserves nothing and is no error.
func TestPreallocate_NothingToReserve(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int64{0, -1} {
		if err := Preallocate(f, n); err != nil {
			t.Fatalf("Preallocate(%d): %v", n, err)
		}
	}
	if a := allocated(t, f); a != 0 {
		t.Fatalf("%d bytes allocated", a)
	}
}
