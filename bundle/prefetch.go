package bundle

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Prefetch sizing for layer reads: the fetch stage (network, SHA-256,
// decryption) runs ahead of the decode stage (zstd, tar, file writes) by up to
// prefetchBufs buffers. Large buffers keep the hand-offs between the two
// goroutines rare; the total stays a few MiB whatever the layer size.
const (
	prefetchBufs = 4
	prefetchSize = 1 << 20
)

// prefetcher reads src in its own goroutine into a small ring of buffers, so
// that fetching, hashing and decrypting a layer overlap with decoding and
// writing it. Bytes and the final error come out in src's order: Read
// returns src's error (io.EOF included) only after every byte before it.
//
// Its reader may also take the bytes where they lie, without a copy: a whole
// buffer at a time (nextBatch), or a piece of the current buffer that stays
// valid until it is released (lend), even after the reader moved on.
type prefetcher struct {
	size   int // of each buffer
	free   chan *pbuf
	full   chan prefetched
	done   chan struct{}
	exited chan struct{}
	stop   sync.Once

	buf *pbuf // the buffer being read from; released when empty
	cur []byte
	err error
	all []*pbuf // every buffer (tests check where lent bytes lie)
}

// pbuf is one buffer of a prefetcher. It goes back to be refilled when its
// last reference is released: the reader's own, and one per lent piece.
type pbuf struct {
	b    []byte
	refs atomic.Int32
	free chan *pbuf
}

// release drops a reference; the last one frees the buffer.
func (x *pbuf) release() {
	if x.refs.Add(-1) == 0 {
		x.free <- x
	}
}

type prefetched struct {
	buf *pbuf
	n   int
	err error
}

// newPrefetcher starts reading src. onErr, when not nil, may replace a read
// error (not io.EOF) by its root cause; it runs in the reading goroutine.
func newPrefetcher(src io.Reader, onErr func(error) error) *prefetcher {
	return newPrefetcherWith(src, onErr, nil)
}

// newPrefetcherWith is newPrefetcher with the buffers an earlier one
// released (nil: new ones), for the parts of a layer read in turn.
func newPrefetcherWith(src io.Reader, onErr func(error) error, bufs [][]byte) *prefetcher {
	return newPrefetcherSized(src, onErr, bufs, prefetchSize)
}

// newPrefetcherSized is newPrefetcherWith with buffers of size bytes: each
// buffer it hands over holds size bytes of src, but the last one (see
// nextBatch).
func newPrefetcherSized(src io.Reader, onErr func(error) error, bufs [][]byte, size int) *prefetcher {
	p := &prefetcher{
		size:   size,
		free:   make(chan *pbuf, prefetchBufs),
		full:   make(chan prefetched, prefetchBufs),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for i := range prefetchBufs {
		x := &pbuf{free: p.free}
		if i < len(bufs) && cap(bufs[i]) >= size {
			x.b = bufs[i][:size]
		} else {
			x.b = make([]byte, size)
		}
		p.all = append(p.all, x)
		p.free <- x
	}
	go p.run(src, onErr)
	return p
}

// release returns the buffers of a closed prefetcher that nothing refers
// to any more (every lent piece released).
func (p *prefetcher) release() [][]byte {
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

func (p *prefetcher) run(src io.Reader, onErr func(error) error) {
	defer close(p.exited)
	for {
		var x *pbuf
		select {
		case x = <-p.free:
		case <-p.done:
			return
		}
		x.refs.Store(1) // the reader's, once it takes it
		n, err := fill(src, x.b)
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

// fill reads until buf is full or src fails; it returns src's error as is
// (unlike io.ReadFull, which renames a short io.EOF).
func fill(src io.Reader, buf []byte) (int, error) {
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

func (p *prefetcher) Read(b []byte) (int, error) {
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

// lend returns up to max bytes of src where they lie in the current buffer,
// and that buffer, which is not refilled until the piece is released (its
// release method); the piece stays valid until then. It returns an error
// (src's, io.EOF at the end) only once every byte before it was lent.
func (p *prefetcher) lend(max int) ([]byte, *pbuf, error) {
	for len(p.cur) == 0 {
		if p.err != nil {
			return nil, nil, p.err
		}
		p.next()
	}
	n := min(max, len(p.cur))
	b := p.cur[:n:n]
	p.cur = p.cur[n:]
	p.buf.refs.Add(1)
	return b, p.buf, nil
}

// nextBatch lends the next buffer whole, without a copy: what it returns is
// valid until the next call of nextBatch, Read or Close. The buffer is full
// (size bytes of src) when the error is nil; otherwise it holds what src
// gave before its error (io.EOF at its end). Once an error was returned it
// is returned again, with nothing.
func (p *prefetcher) nextBatch() ([]byte, error) {
	if p.err != nil {
		p.cur = nil
		return nil, p.err
	}
	p.next()
	b := p.cur
	p.cur = nil
	return b, p.err
}

func (p *prefetcher) next() {
	if p.buf != nil {
		p.buf.release()
		p.buf = nil
	}
	var c prefetched
	select {
	case c = <-p.full:
	case <-p.exited:
		// Closed: the goroutine may have ended without handing over its
		// last read (a prefetcher read by another one's goroutine is closed
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

// drainErr discards what is left and returns the final error (nil for io.EOF).
func (p *prefetcher) drainErr() error {
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
func (p *prefetcher) Close(closeSrc func() error) error {
	var err error
	p.stop.Do(func() { close(p.done) })
	if closeSrc != nil {
		err = closeSrc()
	}
	<-p.exited
	return err
}
