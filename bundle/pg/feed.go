package pg

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// A staged restore loads several tables at once, on several connections,
// from one stream in which the tables come one after the other. The stream
// is read at its own pace (decompression is much faster than COPY) into one
// feed per table, which its loader reads. A feed keeps its data in memory up
// to a small bound shared by all feeds; beyond it, the reader waits for the
// loaders, except when a loader is idle waiting for a later table: then it
// spills the rest of the current table to a spool file (with a CRC-32C per
// chunk; its first spoolRaw bytes as they are, the rest s2-compressed) so
// that it reaches the next table. The spool is an unlinked temporary file:
// nothing of it outlives the process, even when killed. Memory stays bounded
// whatever the size of the data; disk use is at most what was read ahead.

const (
	// feedMemory bounds the data held in memory by all feeds together.
	feedMemory = 8 << 20
	// feedChunk is the size of the reads from the stream, and of a spooled
	// chunk.
	feedChunk = 256 << 10
)

// spoolRaw is how much of the spool is written uncompressed. The restore is
// CPU-bound on both cores (PostgreSQL's backends and ours); compressing what
// is read back seconds later, from the page cache, cost more of that CPU (s2,
// then decoding it; docs/architecture.md, "Measured choices") than the disk
// it saves: compression only bounds the disk use of a very large read-ahead.
// A variable for tests.
var spoolRaw int64 = 512 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chunks recycles the buffers of feed parts, in memory and read back from
// the spool: a restore moves its whole stream through them, and a new
// buffer for each piece made garbage at the stream's pace, which the heap
// carried until the next collection (about as much again as the feeds
// hold).
var chunks = sync.Pool{New: func() any { b := make([]byte, 0, feedChunk); return &b }}

// getChunk returns a buffer of length n from the pool (a new one when n is
// larger than feedChunk).
func getChunk(n int) *[]byte {
	if n > feedChunk {
		b := make([]byte, n)
		return &b
	}
	b := chunks.Get().(*[]byte)
	*b = (*b)[:n]
	return b
}

// putChunk gives a buffer of getChunk back.
func putChunk(b *[]byte) {
	if b != nil && cap(*b) == feedChunk {
		chunks.Put(b)
	}
}

// errLoadAborted ends the loads after a failure elsewhere.
var errLoadAborted = errors.New("restore aborted")

// spool is the append-only file that feeds spill into.
type spool struct {
	mu   sync.Mutex
	f    *os.File
	size int64
}

func newSpool(dir string) (*spool, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "kubectl-assisted-restore-*.spool")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the open file is all there is, and it goes with the
	// process however it ends.
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &spool{f: f}, nil
}

func (s *spool) close() { _ = s.f.Close() }

// write appends raw (compressed once spoolRaw bytes are written) and
// returns where it is.
func (s *spool) write(raw []byte) (feedPart, error) {
	s.mu.Lock()
	compress := s.size >= spoolRaw
	s.mu.Unlock()
	enc := raw
	if compress {
		enc = s2.Encode(nil, raw)
	}
	s.mu.Lock()
	off := s.size
	s.size += int64(len(enc))
	s.mu.Unlock()
	if _, err := pipe.WriteAt(s.f, enc, off); err != nil {
		return feedPart{}, fmt.Errorf("restore: spool: %w", err)
	}
	return feedPart{spooled: true, compressed: compress, off: off, n: len(enc), raw: len(raw), crc: crc32.Checksum(raw, castagnoli)}, nil
}

// read returns the raw bytes of a spooled part, in a buffer of getChunk.
func (s *spool) read(p feedPart) (*[]byte, error) {
	enc := getChunk(p.n)
	if _, err := s.f.ReadAt(*enc, p.off); err != nil {
		putChunk(enc)
		return nil, fmt.Errorf("restore: spool: %w", err)
	}
	raw, err := enc, error(nil)
	if p.compressed {
		raw = getChunk(p.raw)
		var dec []byte
		dec, err = s2.Decode(*raw, *enc)
		putChunk(enc)
		if err == nil && len(dec) != p.raw {
			// Into raw when its length is the one spooled, else it differs.
			err = errors.New("decoded size")
		}
	}
	if err != nil || len(*raw) != p.raw || crc32.Checksum(*raw, castagnoli) != p.crc {
		putChunk(raw)
		return nil, fmt.Errorf("%w: the restore's spool file changed under it (at %d)", ErrChecksumMismatch, p.off)
	}
	return raw, nil
}

// feedPart is a piece of a table's data: in memory (a buffer of
// getChunk), or spooled.
type feedPart struct {
	mem        *[]byte
	spooled    bool
	compressed bool // s2
	off        int64
	n, raw     int
	crc        uint32
}

// feeder holds the feeds of one restore and what they share.
type feeder struct {
	mu   sync.Mutex
	cond *sync.Cond
	// mem is the in-memory data of all feeds.
	mem int
	// idle counts the loaders waiting for a table.
	idle    int
	aborted bool
	dir     string
	spool   *spool
	// noSpool: spilling was tried and failed (spoolErr); the reader then
	// only waits.
	noSpool  bool
	spoolErr error
	// spilled counts the bytes spilled, for the log.
	spilled int64
}

func newFeeder(dir string) *feeder {
	f := &feeder{dir: dir}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *feeder) close() {
	if f.spool != nil {
		f.spool.close()
	}
}

// abort wakes and ends every reader and writer.
func (f *feeder) abort() {
	f.mu.Lock()
	f.aborted = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// loaderIdle and loaderBusy count the loaders waiting for a table.
func (f *feeder) loaderIdle() {
	f.mu.Lock()
	f.idle++
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *feeder) loaderBusy() {
	f.mu.Lock()
	f.idle--
	f.mu.Unlock()
}

// feed is one table's data between the stream and its loader.
type feed struct {
	f     *feeder
	parts []feedPart // guarded by f.mu
	done  bool
	err   error
	// rows is the table's row count, final once done.
	rows int64
}

func (f *feeder) newFeed() *feed { return &feed{f: f} }

// push adds data (copied) to the end of fd: in memory while there is room,
// else to the spool when a loader is idle, else after waiting for room.
func (fd *feed) push(data []byte) error {
	f := fd.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if f.aborted {
			return errLoadAborted
		}
		if f.mem+len(data) <= feedMemory || f.mem == 0 {
			b := getChunk(len(data))
			copy(*b, data)
			fd.parts = append(fd.parts, feedPart{mem: b})
			f.mem += len(data)
			f.cond.Broadcast()
			return nil
		}
		if f.idle > 0 && !f.noSpool {
			if f.spool == nil {
				s, err := newSpool(f.dir)
				if err != nil {
					f.noSpool = true
					continue
				}
				f.spool = s
			}
			f.mu.Unlock()
			p, err := f.spool.write(data)
			f.mu.Lock()
			if err != nil {
				// A full disk only ends the reading ahead: what is
				// spooled stays readable, the rest waits for the loaders.
				f.noSpool = true
				f.spoolErr = err
				continue
			}
			fd.parts = append(fd.parts, p)
			f.spilled += int64(len(data))
			f.cond.Broadcast()
			return nil
		}
		f.cond.Wait()
	}
}

// finish marks the end of fd's data (err: the stream failed in it).
func (fd *feed) finish(rows int64, err error) {
	f := fd.f
	f.mu.Lock()
	fd.done, fd.rows, fd.err = true, rows, err
	f.cond.Broadcast()
	f.mu.Unlock()
}

// reader returns the io.Reader its loader copies from.
func (fd *feed) reader(ctx context.Context) io.Reader { return &feedReader{fd: fd, ctx: ctx} }

type feedReader struct {
	fd  *feed
	ctx context.Context
	// cur is what is left of buf, the part being read.
	cur []byte
	buf *[]byte
	err error
}

func (r *feedReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(r.cur) == 0 {
		putChunk(r.buf)
		r.buf = nil
		fd, f := r.fd, r.fd.f
		f.mu.Lock()
		for len(fd.parts) == 0 && !fd.done && !f.aborted {
			f.cond.Wait()
		}
		switch {
		case f.aborted:
			f.mu.Unlock()
			r.err = errLoadAborted
			if err := r.ctx.Err(); err != nil {
				r.err = err
			}
			return 0, r.err
		case len(fd.parts) == 0:
			err := fd.err
			f.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			r.err = err
			return 0, err
		}
		part := fd.parts[0]
		fd.parts[0] = feedPart{}
		fd.parts = fd.parts[1:]
		if !part.spooled {
			f.mem -= len(*part.mem)
			f.cond.Broadcast()
		}
		f.mu.Unlock()
		if part.spooled {
			raw, err := f.spool.read(part)
			if err != nil {
				r.err = err
				return 0, err
			}
			part.mem = raw
		}
		r.buf, r.cur = part.mem, *part.mem
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
