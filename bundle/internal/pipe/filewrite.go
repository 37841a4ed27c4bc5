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

// FileWriter writes to F, a file written from its start, in writes of at
// most FileWriteSize bytes that begin at multiples of FileWriteSize in the
// file whatever the sizes of the writes it is given: a write that starts or
// ends inside a page costs the kernel the partial page's own path (buffer
// heads marked dirty one at a time), which writes of 1 MiB plus an age tag
// per chunk, at offsets shifted by an age header, hit at every 32 KiB.
type FileWriter struct {
	F   *os.File
	off int64 // written so far
}

func (w *FileWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		m, err := w.F.Write(b[:alignedCut(w.off, len(b))])
		n, w.off = n+m, w.off+int64(m)
		if err != nil {
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// alignedCut is how much of n bytes at file offset off to write at once: up
// to the next multiple of FileWriteSize.
func alignedCut(off int64, n int) int {
	return min(n, FileWriteSize-int(off%FileWriteSize))
}
