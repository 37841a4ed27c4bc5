package codec

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// frameDecoder decodes a layer's zstd stream (RFC 8878, section 3.1: a
// sequence of frames) with the frames that frameEncoder writes, independent
// frames of a known content size, decoded several at a time. One goroutine
// (the splitter) reads the stream and finds where each frame ends from its
// block headers alone; a frame of at most fastFrame bytes, in and out, goes
// whole to one of the workers (zstd's DecodeAll), and the plaintext comes
// out in stream order. The raw blocks of a frame like StoreRaw's (no content
// size, no checksum, a small window) are their own plaintext and are passed
// as they are (passRaw). Any other frame (larger, with a dictionary) is
// decoded by one streaming decoder, bounded to that frame; what the splitter
// cannot walk (not a frame, a reserved block type, a truncated frame) goes
// with the rest of the stream to that streaming decoder, which reports it as
// before. Every compressed block is decoded by klauspost/compress, with its
// checks (window, content size, checksum); the splitter only decides which
// decoder gets which bytes.
type frameDecoder struct {
	all    *zstd.Decoder // DecodeAll, one call per worker at a time
	stream *zstd.Decoder // one frame, or the rest of the stream, at a time
	free   chan *frameOut
	work   chan *frameOut
	order  chan *frameOut // to Read, in stream order

	workers sync.WaitGroup
	closed  bool
	hist    rawHistory // passRaw's window (the splitter's)

	// per stream (Reset)
	lender  pipe.Lender // src, when it lends its bytes (passRaw takes them without a copy)
	stop    chan struct{}
	exited  chan struct{}
	stopped bool
	cur     *frameOut
	off     int // in cur.out
	li, lo  int // in cur.lent: the slice, the offset in it
	err     error
}

// frameOut is one frame (in: the whole frame, for a worker), a piece of
// what the streaming decoder wrote (out only), or raw blocks' content as it
// lies in the source's buffer ref (lent only); err ends the stream.
type frameOut struct {
	in, out []byte
	lent    [][]byte
	ref     pipe.Ref
	err     error
	done    chan struct{}
}

const (
	// fastFrame bounds a frame decoded whole: its size and its content
	// size (frameEncoder writes frames of frameInput plaintext bytes).
	fastFrame = 2*frameInput + 64<<10
	// passWindow bounds the window of a frame whose raw blocks are passed
	// without a decoder: the history kept in case a compressed block
	// follows them.
	passWindow = 1 << 20
	// streamPiece is the plaintext of one hand-off from the streaming decoder.
	streamPiece = 1 << 20
)

// maxDecoderWindow bounds the memory a hostile stream can make the decoder use.
const maxDecoderWindow = 64 << 20

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

func newFrameDecoder() (*frameDecoder, error) {
	workers := frameWorkers()
	all, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(maxDecoderWindow), zstd.WithDecoderConcurrency(workers), zstd.WithDecoderMaxMemory(fastFrame))
	if err != nil {
		return nil, err
	}
	stream, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(maxDecoderWindow), zstd.WithDecoderConcurrency(1))
	if err != nil {
		all.Close()
		return nil, err
	}
	// One piece being read, one per worker, one being split.
	jobs := workers + 2
	d := &frameDecoder{all: all, stream: stream, free: make(chan *frameOut, jobs), work: make(chan *frameOut, jobs), order: make(chan *frameOut, jobs), stopped: true}
	for range jobs {
		d.free <- &frameOut{}
	}
	for range workers {
		d.workers.Go(func() {
			for j := range d.work {
				j.out, j.err = d.all.DecodeAll(j.in, j.out[:0])
				if j.err != nil {
					j.out = j.out[:0]
				}
				close(j.done)
			}
		})
	}
	return d, nil
}

// Reset starts decoding src; the previous stream must have been stopped
// (read to its end, or Stop). A source that is a pipe.Lender lends the raw blocks'
// content, which is then handed out where it lies.
func (d *frameDecoder) Reset(src io.Reader) {
	d.stop, d.exited, d.stopped = make(chan struct{}), make(chan struct{}), false
	d.err, d.off, d.li, d.lo = nil, 0, 0, 0
	d.lender, _ = src.(pipe.Lender)
	go d.split(src, d.stop, d.exited)
}

// Stop ends the splitter and waits for it: after Stop, src is no longer
// read, and its reader may read it again. Pieces in flight are recycled.
func (d *frameDecoder) Stop() {
	if d.stopped {
		return
	}
	d.stopped = true
	close(d.stop)
	if d.cur != nil {
		d.recycle(d.cur)
		d.cur = nil
	}
	// The pieces are recycled while the splitter ends (lent ones hold the
	// source's buffers, which the splitter may be waiting for), then what
	// it queued before it exited.
	for exited := false; !exited; {
		select {
		case j := <-d.order:
			<-j.done
			d.recycle(j)
		case <-d.exited:
			exited = true
		}
	}
	for {
		select {
		case j := <-d.order:
			<-j.done
			d.recycle(j)
		default:
			return
		}
	}
}

// Close stops the decoder for good. src must no longer block (close it
// first: see LayerReader.Close).
func (d *frameDecoder) Close() {
	if d.closed {
		return
	}
	d.Stop()
	d.closed = true
	close(d.work)
	d.workers.Wait()
	d.all.Close()
	d.stream.Close()
}

func (d *frameDecoder) recycle(j *frameOut) {
	if j.ref != nil {
		j.ref.Release()
	}
	clear(j.lent)
	j.in, j.out, j.lent, j.ref, j.err, j.done = j.in[:0], j.out[:0], j.lent[:0], nil, nil, nil
	d.free <- j
}

func (d *frameDecoder) Read(p []byte) (int, error) {
	b, err := d.next(len(p))
	return copy(p, b), err
}

// next returns up to max bytes of the plaintext (at least one, or an error)
// without a copy: they are valid until the next call of next, Read, Stop or
// Close.
func (d *frameDecoder) next(max int) ([]byte, error) {
	if max <= 0 {
		return nil, nil
	}
	for {
		if d.cur != nil {
			if d.off < len(d.cur.out) {
				b := d.cur.out[d.off:min(len(d.cur.out), d.off+max)]
				d.off += len(b)
				return b, nil
			}
			for d.li < len(d.cur.lent) {
				l := d.cur.lent[d.li]
				if d.lo < len(l) {
					b := l[d.lo:min(len(l), d.lo+max)]
					d.lo += len(b)
					return b, nil
				}
				d.li, d.lo = d.li+1, 0
			}
			err := d.cur.err
			d.recycle(d.cur)
			d.cur, d.off, d.li, d.lo = nil, 0, 0, 0
			if err != nil {
				d.err = err
			}
		}
		if d.err != nil {
			// The splitter may have read ahead of a frame that failed:
			// stop it (at the end it has already exited).
			d.Stop()
			return nil, d.err
		}
		j := <-d.order
		<-j.done
		d.cur = j
	}
}

// split reads src frame by frame and hands out the frames (or their
// plaintext) in order; an end (io.EOF included) is the last piece it sends.
func (d *frameDecoder) split(src io.Reader, stop, exited chan struct{}) {
	defer close(exited)
	take := func() *frameOut {
		select {
		case j := <-d.free:
			return j
		case <-stop:
			return nil
		}
	}
	end := func(err error) {
		if j := take(); j != nil {
			j.err, j.done = err, closedChan
			d.order <- j
		}
	}
	fr := &frameReader{src: src}
	for {
		j := take()
		if j == nil {
			return
		}
		start, err := fr.next(&j.in)
		switch {
		case err != nil:
			// io.EOF (next's own, nothing read): the stream ended between
			// frames; else the source's error.
			d.recycle(j)
			end(err)
			return
		case fr.transparent:
			// Not a frame the splitter can walk: the rest of the stream
			// goes to the streaming decoder as it is.
			rest := io.MultiReader(bytes.NewReader(bytes.Clone(start)), fr)
			fr.transparent = true
			d.recycle(j)
			if err := d.streamOut(rest, 0, take, stop); err != nil {
				end(err)
			} else {
				end(io.EOF)
			}
			return
		}
		if fr.fast {
			// Read the whole frame into j.in; one that turns out larger
			// than fastFrame is streamed, from what was read so far.
			j.in = start
			for !fr.ended && len(j.in) < fastFrame {
				if err = fr.fill(&j.in, fastFrame); err != nil {
					break
				}
			}
			if err != nil && err != io.ErrUnexpectedEOF { //nolint:errorlint // fill's own: a truncated frame, which the decoder reports
				d.recycle(j)
				end(err) // the source's
				return
			}
			if fr.ended && err == nil && !fr.transparent {
				j.done = make(chan struct{})
				d.order <- j // before work: Read sees frames in order
				d.work <- j
				continue
			}
			start = j.in
		}
		if fr.window > 0 && !fr.fast {
			d.recycle(j)
			done, err := d.passRaw(fr, take, stop)
			if err != nil {
				end(err)
				return
			}
			if !done && fr.transparent {
				end(io.EOF) // the decoder had the rest of the stream
				return
			}
			continue
		}
		start = bytes.Clone(start) // j's buffer goes back to the pool
		d.recycle(j)
		// One frame through the streaming decoder; fr ends at its end (or,
		// where it cannot walk it, passes the rest of the stream).
		if err := d.streamOut(io.MultiReader(bytes.NewReader(start), fr), 0, take, stop); err != nil {
			end(err)
			return
		}
		if fr.transparent {
			end(io.EOF)
			return
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// streamOut decodes r with the streaming decoder and hands out its
// plaintext, but for the first skip bytes.
func (d *frameDecoder) streamOut(r io.Reader, skip int, take func() *frameOut, stop chan struct{}) error {
	if err := d.stream.Reset(r); err != nil {
		return err
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, d.stream, int64(skip)); err != nil {
			if err == io.EOF { //nolint:errorlint // io.CopyN's own
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	for {
		j := take()
		if j == nil {
			return errFrameStopped
		}
		if cap(j.out) < streamPiece {
			j.out = make([]byte, 0, streamPiece)
		}
		// fill, not io.ReadFull: the decoder's own io.ErrUnexpectedEOF (a
		// truncated frame) is an error, only its io.EOF is the end.
		n, err := pipe.Fill(d.stream, j.out[:streamPiece])
		j.out, j.done = j.out[:n], closedChan
		if n > 0 {
			select {
			case d.order <- j:
			case <-stop:
				return errFrameStopped
			}
		} else {
			d.recycle(j)
		}
		switch {
		case err == nil:
		case err == io.EOF: //nolint:errorlint // the decoder's end
			return nil
		default:
			return err
		}
	}
}

var errFrameStopped = errors.New("zstd: decoder stopped")

// keepWindow returns the last window bytes of hist followed by b, in hist's
// buffer.
func keepWindow(hist, b []byte, window int) []byte {
	tail := b[max(0, len(b)-window):]
	if keep := window - len(tail); len(hist) > keep {
		hist = append(hist[:0], hist[len(hist)-keep:]...)
	}
	return append(hist, tail...)
}

// rawHistory is the last window bytes passRaw handed out, which a
// compressed block that follows raw ones may refer to: copied (pieces the
// splitter copied into its own buffers), or, for lent pieces, the pieces
// themselves, each holding its source buffer until the window moves past it.
type rawHistory struct {
	window int
	copied []byte
	lent   [][]byte
	refs   []pipe.Ref
	n      int // bytes in lent
}

func (h *rawHistory) reset(window int) {
	h.release()
	h.window, h.copied = window, h.copied[:0]
}

// keepCopy notes pieces handed out from the splitter's own buffer.
func (h *rawHistory) keepCopy(b []byte) { h.copied = keepWindow(h.copied, b, h.window) }

// keepLent notes a lent piece of ref's buffer, taking a reference on it,
// and drops the pieces the window no longer reaches.
func (h *rawHistory) keepLent(b []byte, ref pipe.Ref) {
	ref.Retain()
	h.lent, h.refs, h.n = append(h.lent, b), append(h.refs, ref), h.n+len(b)
	drop := 0
	for drop < len(h.lent) && h.n-len(h.lent[drop]) >= h.window {
		h.n -= len(h.lent[drop])
		h.refs[drop].Release()
		drop++
	}
	if drop > 0 {
		n := copy(h.lent, h.lent[drop:])
		clear(h.lent[n:])
		copy(h.refs, h.refs[drop:])
		clear(h.refs[n:])
		h.lent, h.refs = h.lent[:n], h.refs[:n]
	}
}

// bytes returns the last window bytes handed out (a copy).
func (h *rawHistory) bytes() []byte {
	if len(h.lent) == 0 {
		return h.copied
	}
	var b []byte
	for _, l := range h.lent {
		b = append(b, l...)
	}
	return b[max(0, len(b)-h.window):]
}

// release drops the references on lent pieces.
func (h *rawHistory) release() {
	for _, r := range h.refs {
		r.Release()
	}
	clear(h.lent)
	clear(h.refs)
	h.lent, h.refs, h.n = h.lent[:0], h.refs[:0], 0
}

// passRaw passes the raw blocks of the frame fr is in (see
// frameReader.window) straight into pieces, without a decoder: a raw
// block's content is its plaintext. A frame that is not raw to its end goes
// on through the streaming decoder, from its first other block, behind a
// frame of raw blocks holding the window the decoder may refer to (whose
// plaintext, already handed out, is skipped): the same window and no
// earlier compressed block, so the same plaintext. done is true once the
// frame was passed whole.
func (d *frameDecoder) passRaw(fr *frameReader, take func() *frameOut, stop chan struct{}) (bool, error) {
	maxBlock := min(fr.window, 128<<10)
	// Lent pieces hold their source buffers until the window moves past
	// them: only a window within one buffer keeps that to two of them.
	lend := d.lender != nil && fr.window <= d.lender.BufferSize()
	d.hist.reset(fr.window)
	defer d.hist.release()
	var j *frameOut
	send := func() {
		if j == nil {
			return
		}
		if len(j.out) == 0 && len(j.lent) == 0 {
			d.recycle(j)
		} else {
			// Keep the last window's worth of what was handed out: a
			// later compressed block may refer to it.
			if len(j.out) > 0 {
				d.hist.keepCopy(j.out)
			}
			j.done = closedChan
			d.order <- j
		}
		j = nil
	}
	unexpected := func(err error) error {
		if err == io.EOF { //nolint:errorlint // io.ReadFull's or lend's own
			return io.ErrUnexpectedEOF
		}
		return err
	}
	for {
		if _, err := io.ReadFull(fr.src, fr.hdr[:]); err != nil {
			send()
			return false, unexpected(err)
		}
		typ, size := fr.setBlock()
		last := fr.last
		if typ != 0 || size > maxBlock {
			// Not raw (or a block the decoder must refuse): the rest of the
			// frame goes through the decoder, behind the window.
			send() // d.hist: the window's worth of what was handed out
			lead := append([]byte{}, zstdMagic...)
			lead = append(lead, 0x00, fr.windowDesc) // no content size, no checksum, no dictionary
			hist := d.hist.bytes()
			for h := hist; len(h) > 0; {
				n := min(len(h), maxBlock)
				bh := uint32(n) << 3 // raw, not last
				lead = append(lead, byte(bh), byte(bh>>8), byte(bh>>16))
				lead = append(lead, h[:n]...)
				h = h[n:]
			}
			skip := len(hist)
			d.hist.release()
			lead = append(lead, fr.hdr[:]...) // fr goes on from this block's content
			fr.pend = nil
			if fr.left == 0 && last {
				fr.ended = true
			}
			return false, d.streamOut(io.MultiReader(bytes.NewReader(lead), fr), skip, take, stop)
		}
		for size > 0 {
			if lend {
				// The content where it lies: one piece per source buffer.
				b, ref, err := d.lender.Lend(size)
				if err != nil {
					send()
					return false, unexpected(err)
				}
				if j != nil && j.ref != ref {
					send()
				}
				if j == nil {
					if j = take(); j == nil {
						ref.Release()
						return false, errFrameStopped
					}
					j.ref = ref
				} else {
					ref.Release() // j holds this buffer already
				}
				j.lent = append(j.lent, b)
				d.hist.keepLent(b, ref)
				size -= len(b)
				continue
			}
			if j == nil {
				if j = take(); j == nil {
					return false, errFrameStopped
				}
				if cap(j.out) < streamPiece {
					j.out = make([]byte, 0, streamPiece)
				}
			}
			n := min(size, cap(j.out)-len(j.out))
			m, err := io.ReadFull(fr.src, j.out[len(j.out):len(j.out)+n])
			j.out = j.out[:len(j.out)+m]
			size -= m
			if err != nil {
				send()
				return false, unexpected(err)
			}
			if len(j.out) == cap(j.out) {
				send()
			}
		}
		if last {
			send()
			return true, nil
		}
	}
}
