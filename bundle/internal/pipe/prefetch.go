package pipe

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// PrefetchBuffers is the length of a Prefetcher's ring: the reading
// goroutine runs ahead of its reader by up to this many buffers. With large
// buffers the hand-offs between the two goroutines stay rare, and the total
// stays a few MiB whatever the stream's size.
const PrefetchBuffers = 4

// Lender is a reader whose bytes can also be taken where they lie, without
// a copy: the frame decoder passes the content of raw zstd blocks out of
// its source's buffers this way.
type Lender interface {
	io.Reader
	// Lend returns up to max bytes where they lie and a reference on the
	// buffer that holds them, which is not reused before the reference is
	// released; the bytes stay valid until then, even after the reader
	// moved on. It returns an error (the source's, io.EOF at the end) only
	// once every byte before it was lent.
	Lend(max int) ([]byte, Ref, error)
	// BufferSize is the size of the buffers Lend lends from: a piece never
	// spans two of them.
	BufferSize() int
}

// Ref is a reference on a lent buffer.
type Ref interface {
	// Retain takes one more reference.
	Retain()
	// Release drops a reference; the last one frees the buffer.
	Release()
}

// Batcher lends a stream a whole buffer at a time (see
// Prefetcher.NextBatch).
type Batcher interface {
	NextBatch() ([]byte, error)
}

// Prefetcher reads src in its own goroutine into a small ring of buffers,
// so that fetching, hashing and decrypting a layer overlap with decoding and
// writing it: the read-side twin of AsyncWriter. Bytes and the final error
// come out in src's order: Read returns src's error (io.EOF included) only
// after every byte before it.
//
// Its reader may also take the bytes where they lie, without a copy: a whole
// buffer at a time (NextBatch, a Batcher), or a piece of the current buffer
// that stays valid until it is released (Lend, a Lender), even after the
// reader moved on.
type Prefetcher struct {
	size   int // of each buffer
	free   chan *pbuf
	full   chan prefetched
	done   chan struct{}
	exited chan struct{}
	stop   sync.Once

	buf *pbuf // the buffer being read from; released when empty
	cur []byte
	err error
}

// pbuf is one buffer of a Prefetcher. It goes back to be refilled when its
// last reference is released: the reader's own, and one per lent piece.
type pbuf struct {
	b    []byte
	refs atomic.Int32
	free chan *pbuf
}

// Retain takes a reference for a lent piece.
func (x *pbuf) Retain() { x.refs.Add(1) }

// Release drops a reference; the last one frees the buffer.
func (x *pbuf) Release() {
	if x.refs.Add(-1) == 0 {
		x.free <- x
	}
}

type prefetched struct {
	buf *pbuf
	n   int
	err error
}

// NewPrefetcher starts reading src into PrefetchBuffers buffers of size
// bytes: each buffer it hands over holds size bytes of src, but the last one
// (see NextBatch). bufs are the buffers an earlier one released (Release),
// reused where they are large enough; nil makes new ones. onErr, when not
// nil, may replace a read error (not io.EOF) by its root cause; it runs in
// the reading goroutine.
func NewPrefetcher(src io.Reader, onErr func(error) error, bufs [][]byte, size int) *Prefetcher {
	p := &Prefetcher{
		size:   size,
		free:   make(chan *pbuf, PrefetchBuffers),
		full:   make(chan prefetched, PrefetchBuffers),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for i := range PrefetchBuffers {
		x := &pbuf{free: p.free}
		if i < len(bufs) && cap(bufs[i]) >= size {
			x.b = bufs[i][:size]
		} else {
			x.b = make([]byte, size)
		}
		p.free <- x
	}
	go p.run(src, onErr)
	return p
}

// BufferSize is the size of each buffer (Lender).
func (p *Prefetcher) BufferSize() int { return p.size }

// Release returns the buffers of a closed Prefetcher that nothing refers
// to any more (every lent piece released), for the next NewPrefetcher.
func (p *Prefetcher) Release() [][]byte {
	var bufs [][]byte
	if p.buf != nil {
		if p.buf.refs.Add(-1) == 0 {
			bufs = append(bufs, p.buf.b[:cap(p.buf.b)])
		}
		p.buf, p.cur = nil, nil
	}
	for {
		select {
		case x := <-p.free:
			bufs = append(bufs, x.b[:cap(x.b)])
		case c := <-p.full:
			bufs = append(bufs, c.buf.b[:cap(c.buf.b)])
		default:
			return bufs
		}
	}
}

func (p *Prefetcher) run(src io.Reader, onErr func(error) error) {
	defer close(p.exited)
	for {
		var x *pbuf
		select {
		case x = <-p.free:
		case <-p.done:
			return
		}
		x.refs.Store(1) // the reader's, once it takes it
		n, err := Fill(src, x.b)
		if err != nil && !errors.Is(err, io.EOF) && onErr != nil {
			err = onErr(err)
		}
		select {
		case p.full <- prefetched{buf: x, n: n, err: err}:
		case <-p.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Fill reads until buf is full or src fails; it returns src's error as is
// (unlike io.ReadFull, which renames a short io.EOF).
func Fill(src io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (p *Prefetcher) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		p.next()
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	if len(p.cur) == 0 && p.err != nil {
		return n, p.err
	}
	return n, nil
}

// Lend returns up to max bytes of src where they lie in the current buffer,
// and that buffer, which is not refilled until the piece is released; the
// piece stays valid until then. It returns an error (src's, io.EOF at the
// end) only once every byte before it was lent.
func (p *Prefetcher) Lend(max int) ([]byte, Ref, error) {
	for len(p.cur) == 0 {
		if p.err != nil {
			return nil, nil, p.err
		}
		p.next()
	}
	n := min(max, len(p.cur))
	b := p.cur[:n:n]
	p.cur = p.cur[n:]
	p.buf.Retain()
	return b, p.buf, nil
}

// NextBatch lends the next buffer whole, without a copy: what it returns is
// valid until the next call of NextBatch, Read or Close. The buffer is full
// (size bytes of src) when the error is nil; otherwise it holds what src
// gave before its error (io.EOF at its end). Once an error was returned it
// is returned again, with nothing.
func (p *Prefetcher) NextBatch() ([]byte, error) {
	if p.err != nil {
		p.cur = nil
		return nil, p.err
	}
	p.next()
	b := p.cur
	p.cur = nil
	return b, p.err
}

func (p *Prefetcher) next() {
	if p.buf != nil {
		p.buf.Release()
		p.buf = nil
	}
	var c prefetched
	select {
	case c = <-p.full:
	case <-p.exited:
		// Closed: the goroutine may have ended without handing over its
		// last read (a Prefetcher read by another one's goroutine is closed
		// from under it).
		select {
		case c = <-p.full:
		default:
			p.cur, p.err = nil, errPrefetchClosed
			return
		}
	}
	p.buf, p.cur, p.err = c.buf, c.buf.b[:c.n], c.err
}

var errPrefetchClosed = errors.New("read after close")

// DrainErr discards what is left and returns the final error (nil for
// io.EOF).
func (p *Prefetcher) DrainErr() error {
	p.cur = nil
	for p.err == nil {
		p.next()
		p.cur = nil
	}
	if errors.Is(p.err, io.EOF) {
		return nil
	}
	return p.err
}

// Close stops the reading goroutine; closeSrc must unblock a read in
// progress (closing the HTTP body or file does).
func (p *Prefetcher) Close(closeSrc func() error) error {
	var err error
	p.stop.Do(func() { close(p.done) })
	if closeSrc != nil {
		err = closeSrc()
	}
	<-p.exited
	return err
}
