// Package pipe has the plumbing of the bundle's streaming stages.
package pipe

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// AsyncWriter moves writes to its own goroutine: Write copies into a buffer
// and returns; full buffers go to dst in order from the goroutine. It lets the
// stages of a stream (compress, encrypt, hash and store) run on different
// cores, with a bounded amount of memory (n buffers of size bytes) between
// them. It is not safe for concurrent Writes.
type AsyncWriter struct {
	dst    io.Writer
	free   chan []byte
	full   chan []byte
	failed chan struct{}
	done   chan struct{}
	cur    []byte
	closed bool

	mu  sync.Mutex
	err error
}

// NewAsyncWriter starts the goroutine that writes to dst.
func NewAsyncWriter(dst io.Writer, size, n int) *AsyncWriter {
	w := &AsyncWriter{
		dst:    dst,
		free:   make(chan []byte, n),
		full:   make(chan []byte, n),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	for range n - 1 {
		w.free <- make([]byte, 0, size)
	}
	w.cur = make([]byte, 0, size)
	go w.run()
	return w
}

// NewAsyncWriterWith is NewAsyncWriter with the given buffers (at least
// one; their capacity is the buffer size), such as those Release returned:
// a stream of several blobs in turn reuses one set.
func NewAsyncWriterWith(dst io.Writer, bufs [][]byte) *AsyncWriter {
	w := &AsyncWriter{
		dst:    dst,
		free:   make(chan []byte, len(bufs)),
		full:   make(chan []byte, len(bufs)),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	for _, b := range bufs[1:] {
		w.free <- b[:0]
	}
	w.cur = bufs[0][:0]
	go w.run()
	return w
}

// Release returns the buffers of a closed writer, for NewAsyncWriterWith;
// nil before Close.
func (w *AsyncWriter) Release() [][]byte {
	if !w.closed {
		return nil
	}
	var bufs [][]byte
	if w.cur != nil {
		bufs = append(bufs, w.cur[:0])
		w.cur = nil
	}
	for {
		select {
		case b := <-w.free:
			bufs = append(bufs, b[:0])
		default:
			return bufs
		}
	}
}

func (w *AsyncWriter) run() {
	defer close(w.done)
	var err error
	for b := range w.full {
		if err == nil && len(b) > 0 {
			if _, err = w.dst.Write(b); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				close(w.failed)
			}
		}
		w.free <- b[:0]
	}
}

// Err is the first error of dst, if any.
func (w *AsyncWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

var errClosed = errors.New("write after close")

func (w *AsyncWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errClosed
	}
	n := 0
	for len(p) > 0 {
		m := copy(w.cur[len(w.cur):cap(w.cur)], p)
		w.cur = w.cur[:len(w.cur)+m]
		p = p[m:]
		n += m
		if len(w.cur) == cap(w.cur) {
			if err := w.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Fill writes n bytes in place: fill is given the next n bytes of the
// current buffer (a fresh one when they do not fit in what is left of it)
// and must write every one of them; no copy is made. n is at most FillMax.
func (w *AsyncWriter) Fill(n int, fill func(b []byte)) error {
	if w.closed {
		return errClosed
	}
	if n > cap(w.cur) {
		return fmt.Errorf("fill of %d bytes: the buffers hold %d", n, cap(w.cur))
	}
	if cap(w.cur)-len(w.cur) < n {
		if err := w.flush(); err != nil {
			return err
		}
	}
	fill(w.cur[len(w.cur) : len(w.cur)+n])
	w.cur = w.cur[:len(w.cur)+n]
	if len(w.cur) == cap(w.cur) {
		return w.flush()
	}
	return nil
}

// FillMax is the most one Fill takes: the size of a buffer.
func (w *AsyncWriter) FillMax() int { return cap(w.cur) }

func (w *AsyncWriter) flush() error {
	select {
	case <-w.failed:
		return w.Err()
	default:
	}
	w.full <- w.cur
	select {
	case w.cur = <-w.free:
		return nil
	case <-w.failed:
		w.cur = nil
		return w.Err()
	}
}

// Close writes what is buffered, waits for the goroutine and returns the
// first error of dst. It does not close dst.
func (w *AsyncWriter) Close() error {
	if w.closed {
		return w.Err()
	}
	w.closed = true
	if len(w.cur) > 0 {
		w.full <- w.cur
		w.cur = nil
	}
	close(w.full)
	<-w.done
	return w.Err()
}
