package pipe

import "os"

// FileWriteSize is the largest write this project makes to a file it fills
// with much data (an extraction, a spool). On Linux 6.x a buffered write is
// cached in folios as large as the write, and large folios come from the
// page allocator's high-order free blocks. On a virtual machine whose host
// takes back free guest memory (free page reporting: Firecracker and other
// balloon setups) those are the blocks the host took, and each of their
// pages faults on the host at its first touch: the system time of a large
// write grows with the write size from 128 KiB on, and smaller writes pay
// in system calls (docs/architecture.md, "Measured choices"). 64 KiB stays
// small on such a machine and costs nothing elsewhere.
const FileWriteSize = 64 << 10

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
