package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// Blobs fetched in ranges, when the network is what the reader waits for.
//
// One GET of a blob is one TCP stream, and a stream over a long path moves
// at what the path gives one connection: over a link with 20 ms each way and
// a cap of 125 MB/s per connection, a GiB of parts fetched one after another
// took 8.9 s where oras, three blobs at a time, took 3.4 s (README,
// Performance). A Sequence (a layer's parts, read in order) from a registry
// therefore starts with one GET per blob, as before, and watches it: each
// time probeBytes have come, if they came slower than fastStream and the
// reader spent most of that time waiting for them, the rest of the sequence is
// fetched as chunks of rangeChunk bytes, rangeStreams GETs with a Range header
// at a time, the chunks handed to the reader in order. At most rangeWindow
// chunks are held at once (outside the Go heap where the system allows),
// whatever the blobs' sizes; a chunk whose stream breaks is asked again for
// what is missing.
//
// Ranges are not the default because they cost the registry more: Debian's
// docker-registry (distribution 2.8) reads every request through a new 4 MiB
// buffer, and on loopback it spent 1.56 s of CPU serving a GiB in 4 MiB
// ranges against 0.6 s for whole blobs, which on a machine of two cores made
// the pull slower (2.0 s against 1.6 s). The distribution-spec asks
// registries to take ranges ("A registry SHOULD support the Range request
// header in accordance with RFC 9110", opencontainers/distribution-spec
// spec.md, "Pulling blobs"); one that answers a range with the whole blob
// (200) is read one blob after another. Nothing here verifies the bytes: the
// reader wraps each blob in its digest check as before.
var (
	rangeChunk   int64 = 4 << 20
	rangeStreams       = 8
	rangeWindow        = rangeStreams + 1
	// rangeMin is the least a sequence must hold to be watched for ranges.
	rangeMin = 2 * rangeChunk
	// probeBytes is how much of the sequence is judged at a time.
	probeBytes int64 = 32 << 20
	// fastStream is the rate (bytes per second) from which one stream is
	// kept whatever the waits: on loopback one stream brings 0.6-1.5 GB/s.
	fastStream = 250e6
)

// maxRangeAttempts bounds the GETs of one chunk: a stream that breaks is
// asked again for the rest of its chunk.
const maxRangeAttempts = 3

// Sequence opens blobs one after another.
type Sequence interface {
	// Next opens the next blob. Read each to its end or Close it before
	// opening the next.
	Next() (io.ReadCloser, error)
	// Close stops the fetches under way and releases their memory.
	Close() error
}

// FetchSequence returns the blobs descs in order, each one Fetch, or, from
// a registry whose blobs together hold at least rangeMin bytes, one GET each
// until the network proves slow, then in ranges several at a time.
func FetchSequence(ctx context.Context, src Source, descs []ocispec.Descriptor) Sequence {
	var total int64
	for _, d := range descs {
		total += d.Size
	}
	if rs, ok := src.(*registrySource); ok && total >= rangeMin {
		ranges := rs.ranges
		if ranges == nil {
			ranges = rs.repo
		}
		return &watchedSequence{ctx: ctx, repo: rs.repo, ranges: ranges, descs: descs}
	}
	return &plainSequence{ctx: ctx, src: src, descs: descs}
}

// watchedSequence fetches one blob per GET and measures the stream: what
// came, how long since the first read, and how much of that the reader
// waited in Read. Each time probeBytes came, it decides: a slow stream the
// reader waits for gives way to a rangedSequence from where the reader is.
type watchedSequence struct {
	ctx    context.Context
	repo   *remote.Repository // the GETs of whole blobs
	ranges *remote.Repository // the ranges, each on a connection of its own
	descs  []ocispec.Descriptor
	next   int

	cur    *watchedBlob
	ranged *rangedSequence
	// mu guards ahead and closed: the reader's goroutine starts the GET
	// ahead while Close may run in another.
	mu      sync.Mutex
	ahead   *aheadGet
	closed  bool
	decided bool // turned to ranges
	turn    bool // ranges from the next blob on (decided at a blob's end)
	start   time.Time
	got     int64
	waited  time.Duration
}

func (s *watchedSequence) Next() (io.ReadCloser, error) {
	if s.ranged != nil {
		return s.ranged.Next()
	}
	if s.next >= len(s.descs) {
		return nil, errors.New("no blob left in the sequence")
	}
	i := s.next
	s.next++
	if s.turn {
		s.ranged = newRangedSequence(s.ctx, s.ranges, s.descs, i, 0)
		return s.ranged.Next()
	}
	var resp *http.Response
	var err error
	s.mu.Lock()
	a := s.ahead
	s.ahead = nil
	s.mu.Unlock()
	if a != nil && a.blob == i {
		resp, err = a.wait()
	} else {
		a.close()
		resp, err = getBlob(s.ctx, s.repo, s.descs[i], -1, -1)
	}
	if err != nil {
		return nil, err
	}
	s.cur = &watchedBlob{s: s, blob: i, body: resp.Body}
	return s.cur, nil
}

func (s *watchedSequence) Close() error {
	s.mu.Lock()
	a := s.ahead
	s.ahead, s.closed = nil, true
	s.mu.Unlock()
	a.close()
	if s.cur != nil {
		s.cur.Close()
	}
	if s.ranged != nil {
		return s.ranged.Close()
	}
	return nil
}

// getAhead sends the GET of blob i while the reader still works on the
// bytes of the blob before it, which its GET brought whole: a part boundary
// then costs no round trip and none of the registry's work before its first
// byte (distribution's lookup of the blob: 5.8 ms of its CPU per GET on
// loopback). Only the answer's head is read: the body waits in the
// connection (the kernel's socket buffer, not this process's memory) until
// Next hands it out, so the blob's bytes, and a failure to fetch it, still
// come in order.
func (s *watchedSequence) getAhead(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ahead != nil || i >= len(s.descs) {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	a := &aheadGet{blob: i, cancel: cancel, done: make(chan struct{})}
	s.ahead = a
	go func() {
		defer close(a.done)
		a.resp, a.err = getBlob(ctx, s.repo, s.descs[i], -1, -1)
	}()
}

// aheadGet is a GET sent ahead of the reader (watchedSequence.getAhead).
type aheadGet struct {
	blob   int
	cancel context.CancelFunc
	done   chan struct{}
	resp   *http.Response
	err    error
}

// wait returns the answer; its body cancels the GET's context when closed.
func (a *aheadGet) wait() (*http.Response, error) {
	<-a.done
	if a.err != nil {
		a.cancel()
		return nil, a.err
	}
	a.resp.Body = &cancelOnClose{ReadCloser: a.resp.Body, cancel: a.cancel}
	return a.resp, nil
}

// close drops a GET sent ahead that will not be read.
func (a *aheadGet) close() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
	if a.resp != nil {
		a.resp.Body.Close()
	}
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// decide is called after each read until the sequence turned: it judges
// each probeBytes that came, on their own, and reports whether to turn to
// ranges. What the reader waits for can change within a layer: compressed
// text, which keeps it busy, and then archives, which do not.
func (s *watchedSequence) decide() bool {
	if s.got < probeBytes {
		return false
	}
	elapsed := time.Since(s.start)
	rate := float64(s.got) / elapsed.Seconds()
	if rate < fastStream && s.waited > elapsed/2 {
		s.decided = true
		return true
	}
	s.start, s.got, s.waited = time.Time{}, 0, 0
	return false
}

// watchedBlob reads one blob's GET, then, once the sequence turned to
// ranges, the rest of the blob from the ranged sequence. Close may run while
// a Read waits in another goroutine (the layer reader stops its fetch stage
// so): it ends that Read, as closing an HTTP body does.
type watchedBlob struct {
	s    *watchedSequence
	blob int
	pos  int64

	mu     sync.Mutex
	body   io.ReadCloser // the GET; nil once ranges took over, or closed
	rest   io.ReadCloser // the rest from the ranged sequence
	closed bool
}

func (r *watchedBlob) Read(p []byte) (int, error) {
	r.mu.Lock()
	body, rest, closed := r.body, r.rest, r.closed
	r.mu.Unlock()
	if rest != nil {
		return rest.Read(p)
	}
	if closed || body == nil {
		return 0, errors.New("read of a closed blob")
	}
	s := r.s
	t := time.Now()
	if s.start.IsZero() {
		s.start = t
	}
	n, err := body.Read(p)
	s.waited += time.Since(t)
	s.got += int64(n)
	r.pos += int64(n)
	if n == 0 || s.decided || !s.decide() {
		if !s.decided && r.pos == s.descs[r.blob].Size {
			s.getAhead(r.blob + 1)
		}
		return n, err
	}
	if r.pos == s.descs[r.blob].Size {
		s.turn = true // the blobs after this one, in ranges
		return n, err
	}
	// The rest of this blob and the blobs after it, in ranges; what the GET
	// brought with this read is returned first.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return n, err
	}
	body.Close()
	r.body = nil
	s.ranged = newRangedSequence(s.ctx, s.ranges, s.descs, r.blob, r.pos)
	rest, rerr := s.ranged.Next()
	if rerr != nil {
		return n, notEOF(rerr)
	}
	r.rest = rest
	return n, nil
}

func (r *watchedBlob) Close() error {
	r.mu.Lock()
	body, rest := r.body, r.rest
	r.body, r.closed = nil, true
	r.mu.Unlock()
	if rest != nil {
		return rest.Close()
	}
	if body != nil {
		return body.Close()
	}
	return nil
}

// plainSequence fetches each blob when it is opened.
type plainSequence struct {
	ctx   context.Context
	src   Source
	descs []ocispec.Descriptor
	next  int
}

func (s *plainSequence) Next() (io.ReadCloser, error) {
	if s.next >= len(s.descs) {
		return nil, errors.New("no blob left in the sequence")
	}
	s.next++
	return s.src.Fetch(s.ctx, s.descs[s.next-1])
}

func (s *plainSequence) Close() error { return nil }

// chunk is one range of one blob, and what has arrived of it.
type chunk struct {
	blob   int
	off, n int64

	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	filled int64
	err    error
}

func (c *chunk) publish(filled int64, err error) {
	c.mu.Lock()
	c.filled = filled
	if err != nil && c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.cond.Broadcast()
}

// wait returns how much of the chunk has arrived once more than have has,
// or the chunk's error.
func (c *chunk) wait(have int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.filled <= have && c.err == nil {
		c.cond.Wait()
	}
	if c.filled > have {
		return c.filled, nil
	}
	return c.filled, c.err
}

// rangedSequence fetches chunks of the blobs with rangeStreams workers, in
// order, each into a buffer from a pool of rangeWindow: a worker takes the
// next chunk only once the reader has given a buffer back.
type rangedSequence struct {
	ctx    context.Context
	cancel context.CancelFunc
	repo   *remote.Repository
	descs  []ocispec.Descriptor
	chunks []*chunk
	first  []int // the index of each blob's first chunk; len(descs)+1 entries
	free   chan []byte
	wg     sync.WaitGroup

	next    int           // the blob Next opens
	from    int64         // where the sequence starts in its first blob
	started bool          // the first range was asked
	whole   bool          // the registry ignored the range: one GET per blob
	body    io.ReadCloser // the whole body of the first chunk's blob, when whole
	cur     *rangedBlob
	bufs    *chunkBuffers
}

// newRangedSequence fetches descs from byte from of blob first on.
func newRangedSequence(ctx context.Context, repo *remote.Repository, descs []ocispec.Descriptor, first int, from int64) *rangedSequence {
	ctx, cancel := context.WithCancel(ctx)
	s := &rangedSequence{ctx: ctx, cancel: cancel, repo: repo, descs: descs, next: first, from: from,
		free: make(chan []byte, rangeWindow), bufs: newChunkBuffers(rangeWindow, int(rangeChunk))}
	for i, d := range descs {
		s.first = append(s.first, len(s.chunks))
		off := int64(0)
		switch {
		case i < first:
			continue
		case i == first:
			off = from
		}
		for ; off < d.Size; off += rangeChunk {
			c := &chunk{blob: i, off: off, n: min(rangeChunk, d.Size-off)}
			c.cond.L = &c.mu
			s.chunks = append(s.chunks, c)
		}
	}
	s.first = append(s.first, len(s.chunks))
	for range rangeWindow {
		s.free <- nil // allocated by the first worker to use it
	}
	return s
}

// getBlob sends a GET of desc's blob, of n bytes from off (n < 0: the whole
// blob). A whole blob must be answered with 200, a range with 200 or 206.
func getBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, off, n int64) (*http.Response, error) {
	ctx = auth.AppendRepositoryScope(ctx, registry.Reference{Registry: repo.Reference.Registry, Repository: repo.Reference.Repository}, auth.ActionPull)
	u := registryURL(repo) + "/v2/" + repo.Reference.Repository + "/blobs/" + desc.Digest.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if n >= 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	resp, err := repo.Client.Do(req)
	if err != nil {
		// No answer (a connection closed or reset before one came): worth
		// asking again.
		return nil, fmt.Errorf("%w: %w", errNoAnswer, redact(err))
	}
	switch {
	case resp.StatusCode == http.StatusOK, resp.StatusCode == http.StatusPartialContent && n >= 0:
		return resp, nil
	case resp.StatusCode == http.StatusNotFound:
		drain(resp)
		return nil, fmt.Errorf("registry answered %s: %w", resp.Status, errdef.ErrNotFound)
	}
	defer drain(resp)
	return nil, responseError(resp)
}

func (s *rangedSequence) Next() (io.ReadCloser, error) {
	if s.next >= len(s.descs) {
		return nil, errors.New("no blob left in the sequence")
	}
	i := s.next
	s.next++
	if s.cur != nil {
		s.cur.release()
		s.cur = nil
	}
	if !s.started {
		s.started = true
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	if s.whole {
		if i == s.chunks[0].blob {
			return s.body, nil
		}
		resp, err := s.get(s.descs[i], -1, -1)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	s.cur = &rangedBlob{s: s, j: s.first[i], end: s.first[i+1]}
	s.cur.atEnd.Store(s.cur.j == s.cur.end)
	return s.cur, nil
}

// start asks for the first chunk. A 206 starts the workers, the first of
// them reading that answer; a 200 (the registry ignored the range) makes the
// sequence one whole GET per blob, the first blob being that answer.
func (s *rangedSequence) start() error {
	if len(s.chunks) == 0 {
		return nil
	}
	c := s.chunks[0]
	resp, err := s.get(s.descs[c.blob], c.off, c.n)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		// The whole blob: what comes before the sequence's start is skipped.
		s.whole, s.body = true, resp.Body
		if _, err := io.CopyN(io.Discard, resp.Body, c.off); err != nil {
			return redact(err)
		}
		return nil
	}
	c.buf = <-s.free // the pool is full: no wait
	jobs := make(chan int)
	for w := range rangeStreams {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if w == 0 {
				s.fill(0, resp)
			}
			for j := range jobs {
				s.fill(j, nil)
			}
		}()
	}
	s.wg.Add(1)
	go s.dispatch(jobs)
	return nil
}

// dispatch hands the chunks after the first to the workers, each once a
// buffer is free. When the sequence is stopped, every chunk not handed out
// fails with the reason, so that no reader waits for it.
func (s *rangedSequence) dispatch(jobs chan<- int) {
	defer s.wg.Done()
	defer close(jobs)
	for j := 1; j < len(s.chunks); j++ {
		select {
		case buf := <-s.free:
			s.chunks[j].buf = buf
			select {
			case jobs <- j:
				continue
			case <-s.ctx.Done():
			}
		case <-s.ctx.Done():
		}
		for _, c := range s.chunks[j:] {
			c.publish(0, s.ctx.Err())
		}
		return
	}
}

// fill fetches chunk j into its buffer, from resp when it is the answer
// already received. A stream that breaks is asked again for what is missing.
func (s *rangedSequence) fill(j int, resp *http.Response) {
	c := s.chunks[j]
	if c.buf == nil {
		c.buf = s.bufs.get()
	}
	buf := c.buf[:c.n]
	var filled int64
	var err error
	for attempt := 1; ; attempt++ {
		if resp == nil {
			resp, err = s.get(s.descs[c.blob], c.off+filled, c.n-filled)
		}
		if err == nil {
			filled, err = s.read(c, resp, buf, filled)
			resp = nil
		}
		if err == nil || s.ctx.Err() != nil || attempt == maxRangeAttempts || !(errors.Is(err, errBrokenStream) || errors.Is(err, errNoAnswer)) {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("fetch %s bytes %d-%d: %w", s.descs[c.blob].Digest, c.off, c.off+c.n-1, notEOF(err))
	}
	c.publish(filled, err)
}

// notEOF is err for a reader in the middle of a blob: an error that wraps
// io.EOF (net/http's, when a connection closes before an answer) would read
// as the blob's end there.
func notEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
	}
	return err
}

// errBrokenStream marks a range whose bytes stopped before its end, and
// errNoAnswer a request that got no answer: both worth asking again.
var (
	errBrokenStream = errors.New("the stream broke")
	errNoAnswer     = errors.New("no answer")
)

// read copies resp, the answer to a range from filled to the chunk's end,
// into buf, publishing as it goes.
func (s *rangedSequence) read(c *chunk, resp *http.Response, buf []byte, filled int64) (int64, error) {
	defer resp.Body.Close()
	want := int64(len(buf)) - filled
	if resp.StatusCode != http.StatusPartialContent {
		return filled, fmt.Errorf("registry answered a range with %s", resp.Status)
	}
	if err := checkContentRange(resp.Header.Get("Content-Range"), c.off+filled, want, s.descs[c.blob].Size); err != nil {
		return filled, err
	}
	if resp.ContentLength >= 0 && resp.ContentLength != want {
		return filled, fmt.Errorf("registry answered a range of %d bytes with %d", want, resp.ContentLength)
	}
	const piece = 256 << 10
	for filled < int64(len(buf)) {
		end := min(filled+piece, int64(len(buf)))
		n, err := io.ReadFull(resp.Body, buf[filled:end])
		filled += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.ErrUnexpectedEOF
			}
			return filled, fmt.Errorf("%w: %w", errBrokenStream, redact(err))
		}
		c.publish(filled, nil)
	}
	// Reading the end lets the transport keep the connection.
	var one [1]byte
	_, _ = resp.Body.Read(one[:])
	return filled, nil
}

// checkContentRange checks a 206's Content-Range against the range asked.
func checkContentRange(v string, off, n, size int64) error {
	want := fmt.Sprintf("bytes %d-%d/", off, off+n-1)
	total, ok := strings.CutPrefix(v, want)
	if ok && (total == "*" || total == strconv.FormatInt(size, 10)) {
		return nil
	}
	return fmt.Errorf("registry answered the range %s%d with Content-Range %q", want, size, v)
}

// get is getBlob within the sequence.
func (s *rangedSequence) get(desc ocispec.Descriptor, off, n int64) (*http.Response, error) {
	return getBlob(s.ctx, s.repo, desc, off, n)
}

func (s *rangedSequence) Close() error {
	s.cancel()
	s.wg.Wait()
	if s.body != nil {
		s.body.Close()
	}
	s.bufs.free()
	return nil
}

// rangedBlob reads one blob's chunks, chunks[j:end], as they arrive, and
// gives each buffer back once read.
type rangedBlob struct {
	s      *rangedSequence
	j, end int
	pos    int64 // read of chunks[j]
	// closed and atEnd are also read by Close, which may run while a Read
	// waits in another goroutine.
	closed atomic.Bool
	atEnd  atomic.Bool // read to its end
}

func (r *rangedBlob) Read(p []byte) (int, error) {
	if r.closed.Load() {
		return 0, errors.New("read of a closed blob")
	}
	if r.j == r.end {
		return 0, io.EOF
	}
	c := r.s.chunks[r.j]
	filled, err := c.wait(r.pos)
	if r.pos >= filled {
		return 0, err
	}
	n := copy(p, c.buf[r.pos:filled])
	r.pos += int64(n)
	if r.pos == c.n {
		r.s.free <- c.buf
		c.buf = nil
		r.j, r.pos = r.j+1, 0
		r.atEnd.Store(r.j == r.end)
	}
	return n, nil
}

// Close ends the blob. A blob closed before its end stops the sequence: a
// Read waiting for a chunk (in another goroutine) returns, as one of an
// HTTP body does when the body is closed; the sequence's later blobs fail.
func (r *rangedBlob) Close() error {
	r.closed.Store(true)
	if !r.atEnd.Load() {
		r.s.cancel()
	}
	return nil
}

// release waits for the chunks of the blob not read, and gives their buffers
// back, so that the next blob's chunks can be fetched.
func (r *rangedBlob) release() {
	for ; r.j < r.end; r.j, r.pos = r.j+1, 0 {
		c := r.s.chunks[r.j]
		for {
			filled, err := c.wait(r.pos)
			if filled == c.n || err != nil {
				break
			}
			r.pos = filled
		}
		if c.buf != nil {
			r.s.free <- c.buf
			c.buf = nil
		}
	}
}
