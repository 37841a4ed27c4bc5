package codec

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The encoder settings are fixed (not derived from the machine) because the
// output of klauspost/compress is stable only for equal code and options, and
// unencrypted bundles promise equal digests for equal input.
//
// No content checksum: the blob's SHA-256, which the signed manifest names
// and every reader checks before it commits anything, covers the compressed
// bytes, and the age chunks are authenticated too; the frame checksum added
// nothing to that but a second pass over the plaintext, a fifth of the
// decoding time of text (docs/architecture.md, "Measured choices"). Readers
// still check the checksums of earlier bundles.
func encoderOptions(level zstd.EncoderLevel) []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false)}
}

// EncoderID names the encoder settings (those of the frames and of the
// encryption); a spooled layer made with other settings is not reused (its
// bytes would differ from what this code makes).
const EncoderID = "zstd-fastest-nocrc-2MiB-frames+raw-frames;age-x25519"

// frameEncoder compresses its input as a sequence of independent zstd
// frames, each of frameInput plaintext bytes (the last one before a Flush or
// Close may be shorter). The frames are compressed on several goroutines and
// written to out in input order, so compression uses every core while the
// output stays what a single goroutine would write: frame boundaries depend
// only on the byte count since the last Flush, and EncodeAll's output only on
// its input and the encoder options, never on timing or on the number of
// goroutines. A reader sees one zstd stream (RFC 8878, section 3.1).
type frameEncoder struct {
	enc   *zstd.Encoder
	out   io.Writer
	cur   *frameJob
	free  chan *frameJob
	work  chan *frameJob
	order chan *frameJob
	done  chan struct{}

	mu  sync.Mutex
	err error // the first write error of out
}

// frameJob is one frame: its input, then its output once done is closed.
type frameJob struct {
	in, out []byte
	done    chan struct{}
}

// frameInput is the plaintext size of one frame: large enough that a frame
// loses little against one continuous stream (zstd's fastest level keeps a
// window of a few MiB anyway), small enough that the frames in flight stay a
// few MiB.
const frameInput = 2 << 20

// frameWorkers is how many frames are compressed at a time.
func frameWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

func newFrameEncoder(out io.Writer, opts ...zstd.EOption) (*frameEncoder, error) {
	workers := frameWorkers()
	enc, err := zstd.NewWriter(nil, append(opts, zstd.WithEncoderConcurrency(workers))...)
	if err != nil {
		return nil, err
	}
	// One job being filled, one per worker, one being written (with one
	// fewer, measured, the producer waits for the writer).
	jobs := workers + 2
	e := &frameEncoder{enc: enc, out: out, free: make(chan *frameJob, jobs), work: make(chan *frameJob, jobs), order: make(chan *frameJob, jobs+1), done: make(chan struct{})}
	for range jobs {
		// The output of a frame that does not compress is its input plus
		// a few headers: allocated once, never regrown.
		e.free <- &frameJob{in: make([]byte, 0, frameInput), out: make([]byte, 0, frameInput+frameInput/64+4096)}
	}
	e.cur = <-e.free
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range e.work {
				j.out = e.enc.EncodeAll(j.in, j.out[:0])
				close(j.done)
			}
		}()
	}
	go func() {
		defer close(e.done)
		e.write()
		close(e.work)
		wg.Wait()
	}()
	return e, nil
}

// write writes the frames in input order; after an error it keeps taking
// them (and drops them), so that Write, Flush and Close never wait forever.
func (e *frameEncoder) write() {
	for j := range e.order {
		<-j.done
		if e.Err() == nil {
			if _, err := e.out.Write(j.out); err != nil {
				e.mu.Lock()
				e.err = err
				e.mu.Unlock()
			}
		}
		j.in = j.in[:0]
		e.free <- j
	}
}

// Err is the first error of the output, if any.
func (e *frameEncoder) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *frameEncoder) Write(p []byte) (int, error) {
	if err := e.Err(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		m := copy(e.cur.in[len(e.cur.in):cap(e.cur.in)], p)
		e.cur.in = e.cur.in[:len(e.cur.in)+m]
		p, n = p[m:], n+m
		if len(e.cur.in) == cap(e.cur.in) {
			e.submit()
			if err := e.Err(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// submit queues the current frame and takes the next free buffer.
func (e *frameEncoder) submit() {
	j := e.cur
	j.done = make(chan struct{})
	e.order <- j // before work: the writer sees frames in input order
	e.work <- j
	e.cur = <-e.free
}

// Flush ends the current frame and returns once every frame so far is
// written to out, so that the caller can write to out directly.
func (e *frameEncoder) Flush() error {
	if len(e.cur.in) > 0 {
		e.submit()
	}
	e.waitWritten()
	return e.Err()
}

// waitWritten waits until the writer has taken every frame queued so far: it
// borrows every free buffer, which the writer returns only after writing.
func (e *frameEncoder) waitWritten() {
	held := []*frameJob{e.cur}
	for len(held) < cap(e.free) {
		held = append(held, <-e.free)
	}
	e.cur = held[0]
	for _, j := range held[1:] {
		e.free <- j
	}
}

// retarget ends the current frame, waits until every frame so far is
// written, and sends the frames that follow to out: one encoder (its
// goroutines and buffers) serves the blobs of a layer in parts in turn.
func (e *frameEncoder) retarget(out io.Writer) error {
	if err := e.Flush(); err != nil {
		return err
	}
	// The writer goroutine is idle (waitWritten holds every buffer); it
	// reads out again only after the next frame is queued on order, which
	// happens after this assignment.
	e.out = out
	return nil
}

// Close writes what is left and stops the goroutines; the encoder is not
// usable afterwards.
func (e *frameEncoder) Close() error {
	if e.order == nil {
		return errors.New("frame encoder already closed")
	}
	if len(e.cur.in) > 0 {
		e.submit()
	}
	close(e.order)
	<-e.done
	e.order = nil
	return e.Err()
}

// NewCompressor returns the zstd encoder a layer is written with at level
// (the fixed settings of encoderOptions, independent frames compressed on
// every core) writing to w; Close ends the stream.
func NewCompressor(w io.Writer, level zstd.EncoderLevel) (io.WriteCloser, error) {
	return newFrameEncoder(w, encoderOptions(level)...)
}

// rawFrame writes a zstd frame of raw blocks (RFC 8878): the frame header
// (no content size, no checksum, a 128 KiB window), then the bytes in blocks
// of up to 128 KiB, each behind its 3-byte header, written straight from the
// caller's slice; finish ends the frame with an empty last block (the format
// allows it), so no block is held back.
type rawFrame struct {
	out     io.Writer
	started bool
	hdr     [3]byte
}

const rawBlockSize = 128 << 10

// rawFrameHeader: the magic number, a frame header descriptor with no
// optional field but the window descriptor, and a window of 2^(10+7) bytes.
var rawFrameHeader = append(bytes.Clone(zstdMagic), 0x00, 7<<3)

func (f *rawFrame) Write(p []byte) (int, error) {
	if !f.started {
		if _, err := f.out.Write(rawFrameHeader); err != nil {
			return 0, err
		}
		f.started = true
	}
	n := 0
	for len(p) > 0 {
		b := p[:min(len(p), rawBlockSize)]
		if err := f.block(b, false); err != nil {
			return n, err
		}
		p, n = p[len(b):], n+len(b)
	}
	return n, nil
}

func (f *rawFrame) block(b []byte, last bool) error {
	h := uint32(len(b)) << 3 // block type 0: raw
	if last {
		h |= 1
	}
	f.hdr = [3]byte{byte(h), byte(h >> 8), byte(h >> 16)}
	if _, err := f.out.Write(f.hdr[:]); err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	_, err := f.out.Write(b)
	return err
}

// finish ends the frame; a frame that got no byte is not written.
func (f *rawFrame) finish() error {
	if !f.started {
		return nil
	}
	return f.block(nil, true)
}
