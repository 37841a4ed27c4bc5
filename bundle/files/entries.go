package files

import (
	"archive/tar"
	"errors"
	"io"
)

// Lender is a reader that can also hand out its next bytes where they lie,
// without a copy (the bundle's layer reader does): Next returns up to max
// bytes, at least one unless it returns an error (io.EOF at the end), valid
// until the next call of Next or Read.
type Lender interface {
	io.Reader
	Next(max int) ([]byte, error)
}

// entries walks a tar stream entry by entry. archive/tar parses every
// header. From a Lender, each header is parsed by a tar.Reader of its own,
// which reads the header's blocks and nothing more (a PAX or GNU long-name
// record is read whole through it), and the entry's content and padding are
// then taken from the Lender directly, so the content reaches the file
// without a copy through tar.Reader. Otherwise one tar.Reader reads it all.
type entries struct {
	r  io.Reader
	lr Lender
	tr *tar.Reader // the one reader, or the current entry's header reader

	left int64 // content of the current entry not yet taken (Lender)
	pad  int64 // the padding after it
	buf  []byte
}

func newEntries(r io.Reader) *entries {
	e := &entries{r: r}
	if lr, ok := r.(Lender); ok {
		e.lr = lr
	} else {
		e.tr = tar.NewReader(r)
	}
	return e
}

// next skips what is left of the current entry and returns the next
// header, or io.EOF at the end of the archive.
func (e *entries) next() (*tar.Header, error) {
	if e.lr == nil {
		return e.tr.Next()
	}
	if err := e.discard(); err != nil {
		return nil, err
	}
	// The padding as archive/tar reads it: an archive that ends in the
	// padding of an entry (or right after its content) ends there.
	for e.pad > 0 {
		b, err := e.lr.Next(int(e.pad))
		e.pad -= int64(len(b))
		if err != nil {
			return nil, err
		}
	}
	e.tr = tar.NewReader(e.lr)
	hdr, err := e.tr.Next()
	if err != nil {
		return nil, err
	}
	// What archive/tar's reader would take as the entry's content: none
	// for the types that have only a header, hdr.Size bytes otherwise
	// (sparse entries, whose content differs, are refused before any of
	// it is read).
	switch hdr.Typeflag {
	case tar.TypeLink, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
	default:
		e.left = hdr.Size
		e.pad = -hdr.Size & (512 - 1)
	}
	return hdr, nil
}

// skip takes and drops n bytes of the stream.
func (e *entries) skip(n int64) error {
	for n > 0 {
		b, err := e.lr.Next(int(min(n, 1<<20)))
		n -= int64(len(b))
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// copyTo writes the current entry's n bytes of content to w, in writes of
// at most CopyBufferSize bytes. A stream that ends first is
// io.ErrUnexpectedEOF.
func (e *entries) copyTo(w io.Writer, n int64) error {
	if e.lr == nil {
		if e.buf == nil {
			e.buf = make([]byte, CopyBufferSize)
		}
		return copyN(w, e.tr, n, e.buf)
	}
	if n > e.left {
		return io.ErrUnexpectedEOF
	}
	for n > 0 {
		b, err := e.lr.Next(int(min(n, CopyBufferSize)))
		if len(b) > 0 {
			e.left -= int64(len(b))
			n -= int64(len(b))
			if _, werr := w.Write(b); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF // the entry is shorter than its header says
			}
			return err
		}
	}
	return nil
}

// discard drops the rest of the current entry's content.
func (e *entries) discard() error {
	if e.lr == nil {
		_, err := io.Copy(io.Discard, e.tr)
		return err
	}
	err := e.skip(e.left)
	e.left = 0
	return err
}

// copyN copies exactly n bytes from src to dst through buf.
func copyN(dst io.Writer, src io.Reader, n int64, buf []byte) error {
	for n > 0 {
		m, err := io.ReadFull(src, buf[:min(n, int64(len(buf)))])
		if m > 0 {
			if _, werr := dst.Write(buf[:m]); werr != nil {
				return werr
			}
			n -= int64(m)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the entry is shorter than its header says
			}
			return err
		}
	}
	return nil
}
