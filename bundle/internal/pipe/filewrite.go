package pipe

import "os"

// FileWriteSize is the largest write this project makes to a file it fills
// with much data (an extraction, a spool). On Linux 6.x a buffered write is
// cached in folios as large as the write, and the page allocator serves
// blocks of up to order 3 (32 KiB) from its per-CPU lists of pages freed
// moments ago, larger ones from its buddy lists (mm/page_alloc.c,
// pcp_allowed_order: order <= PAGE_ALLOC_COSTLY_ORDER). On a virtual machine
// whose host takes back free guest memory (free page reporting: Firecracker
// and other balloon setups) the buddy lists' large blocks are the ones the
// host took, and each of their pages faults on the host at its first touch:
// the system time of 64 KiB writes and larger ones jumps in some runs and not
// others, 32 KiB writes keep it level, and smaller ones pay in system calls
// (docs/architecture.md, "Measured choices"). oras writes 32 KiB too.
const FileWriteSize = 32 << 10

// WriteAt writes b at off in writes of at most FileWriteSize bytes.
func WriteAt(f *os.File, b []byte, off int64) (int, error) {
	n := 0
	for len(b) > 0 {
		m, err := f.WriteAt(b[:min(len(b), FileWriteSize)], off)
		n += m
		if err != nil {
			return n, err
		}
		b, off = b[m:], off+int64(m)
	}
	return n, nil
}

// Write writes b to w in writes of at most FileWriteSize bytes.
func Write(w interface{ Write([]byte) (int, error) }, b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		m, err := w.Write(b[:min(len(b), FileWriteSize)])
		n += m
		if err != nil {
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// FileWriter writes to F in writes of at most FileWriteSize bytes.
type FileWriter struct{ F *os.File }

func (w FileWriter) Write(b []byte) (int, error) { return Write(w.F, b) }
