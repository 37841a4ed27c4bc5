package bundle

import "io"

// Progress receives the progress of long steps (dump, compress, push, pull).
// It uses only plain types so any renderer implements it without importing
// this package. A nil Progress is silent.
type Progress interface {
	// Start begins a step; total is its size in bytes, or 0 when unknown.
	Start(id, label string, total int64)
	// Add reports n more bytes done.
	Add(id string, n int64)
	// Done ends the step; err is nil on success.
	Done(id string, err error)
}

type nopProgress struct{}

func (nopProgress) Start(string, string, int64) {}
func (nopProgress) Add(string, int64)           {}
func (nopProgress) Done(string, error)          {}

func progressOrNop(p Progress) Progress {
	if p == nil {
		return nopProgress{}
	}
	return p
}

// countingReader reports bytes read to a progress step.
type countingReader struct {
	r  interface{ Read([]byte) (int, error) }
	p  Progress
	id string
	n  int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		c.p.Add(c.id, int64(n))
	}
	return n, err
}

// DrainStored forwards to a layer reader below (see files.StoredDrainer).
func (c *countingReader) DrainStored() error {
	if d, ok := c.r.(interface{ DrainStored() error }); ok {
		return d.DrainStored()
	}
	_, err := io.Copy(io.Discard, c.r)
	return err
}
