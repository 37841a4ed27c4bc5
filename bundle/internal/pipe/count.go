package pipe

import "io"

// CountingReader counts the bytes read through it in N and, when OnRead is
// set, reports each read's count to it (progress bars).
type CountingReader struct {
	R      io.Reader
	N      int64
	OnRead func(n int64)
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	if n > 0 {
		c.N += int64(n)
		if c.OnRead != nil {
			c.OnRead(int64(n))
		}
	}
	return n, err
}

// DrainStored reads the rest of the stream as stored, uncounted: it forwards
// to a reader below that can (files.StoredDrainer, a layer reader that skips
// decryption), and otherwise discards the rest of R.
func (c *CountingReader) DrainStored() error {
	if d, ok := c.R.(interface{ DrainStored() error }); ok {
		return d.DrainStored()
	}
	_, err := io.Copy(io.Discard, c.R)
	return err
}

// CountingWriter counts the bytes written through it in N.
type CountingWriter struct {
	W io.Writer
	N int64
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
