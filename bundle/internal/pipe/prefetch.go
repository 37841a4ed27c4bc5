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
	read   chan prefetched // read, not yet tapped (a tapped Prefetcher's)
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
	return NewTappedPrefetcher(src, nil, onErr, bufs, size)
}

// Tap sees a stream's bytes after they were read and before its reader
// gets them: b is what one read brought, err its error (nil while the
// stream goes on). It returns the error to hand on in err's place: a check
// (a digest at the end, say) may fail a stream whose reads did not.
type Tap func(b []byte, err error) error

// NewTappedPrefetcher is NewPrefetcher with tap run on each buffer, in
// order, in a goroutine of its own between the reads and the reader: a tap
// that costs as much as the reads (hashing what a socket brings) then runs
// beside them rather than after them, on buffers it neither copies nor
// holds. onErr runs on the error tap hands on. A nil tap is NewPrefetcher.
func NewTappedPrefetcher(src io.Reader, tap Tap, onErr func(error) error, bufs [][]byte, size int) *Prefetcher {
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
	if tap == nil {
		go p.run(src, func(c prefetched) prefetched {
			if c.err != nil && !errors.Is(c.err, io.EOF) && onErr != nil {
				c.err = onErr(c.err)
			}
			return c
		}, p.full, p.exited)
		return p
	}
	// Two goroutines: the reads hand each buffer to the tap's goroutine,
	// which hands it on; exited closes once both ended.
	read := make(chan prefetched, PrefetchBuffers)
	p.read = read
	readExited := make(chan struct{})
	go p.run(src, func(c prefetched) prefetched { return c }, read, readExited)
	go func() {
		defer func() {
			<-readExited
			close(p.exited)
		}()
		for {
			var c prefetched
			select {
			case c = <-read:
			case <-p.done:
				return
			}
			if err := tap(c.buf.b[:c.n], c.err); err != nil || c.err == nil {
				c.err = err // the stream's own end stays an end
			}
			if c.err != nil && !errors.Is(c.err, io.EOF) && onErr != nil {
				c.err = onErr(c.err)
			}
			select {
			case p.full <- c:
			case <-p.done:
				return
			}
			if c.err != nil {
				return
			}
		}
	}()
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
		case c := <-p.read: // nil (never ready) unless tapped
			bufs = append(bufs, c.buf.b[:cap(c.buf.b)])
		default:
			return bufs
		}
	}
}

// run fills the free buffers from src and sends each, as then, to out;
// exited closes when it ends (at src's error or Close).
func (p *Prefetcher) run(src io.Reader, then func(prefetched) prefetched, out chan<- prefetched, exited chan struct{}) {
	defer close(exited)
	for {
		var x *pbuf
		select {
		case x = <-p.free:
		case <-p.done:
			return
		}
		x.refs.Store(1) // the reader's, once it takes it
		n, err := Fill(src, x.b)
		c := then(prefetched{buf: x, n: n, err: err})
		select {
		case out <- c:
		case <-p.done:
			return
		}
		if c.err != nil {
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
