package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// OpenLayer streams a layer's plaintext: fetched, verified, decrypted and
// decompressed on the fly. The reader's final Read returns io.EOF only when
// the blob's size and digest match, the age stream authenticated to its last
// chunk, and the zstd frame ended cleanly with its checksum; otherwise it
// returns an *IntegrityError, *DecryptError or *FormatError. Read it to EOF
// before committing what it fed (a transaction, a staged directory), and
// Close it.
func (b *Bundle) OpenLayer(ctx context.Context, kind LayerKind) (io.ReadCloser, error) {
	l, ok := b.Layer(kind)
	if !ok {
		return nil, fmt.Errorf("the bundle has no %s layer", kind)
	}
	if !l.Known {
		return nil, fmt.Errorf("the %s layer is of a newer format minor version and cannot be decoded", kind)
	}
	return b.openLayer(ctx, l)
}

func (b *Bundle) openLayer(ctx context.Context, l Layer) (io.ReadCloser, error) {
	if l.Encrypted && len(b.identities) == 0 {
		return nil, &DecryptError{Layer: l.Kind, Err: ErrNoIdentity}
	}
	if len(l.Parts) > 1 || (len(l.Parts) == 1 && l.Kind == LayerFiles) {
		id := "pull " + string(l.Kind)
		b.progress.Start(id, id, l.Size())
		pr := &partsReader{ctx: ctx, b: b, l: l, id: id, seq: &lockedSequence{seq: oci.FetchSequence(ctx, b.src, l.Parts)}, fetched: -1}
		if err := pr.first(); err != nil {
			pr.seq.Close()
			b.progress.Done(id, err)
			return nil, err
		}
		return pr, nil
	}
	return b.openBlob(ctx, l, b.fetch)
}

// openBlob streams the plaintext of l's one blob (l.Descriptor), fetched by fetch.
func (b *Bundle) openBlob(ctx context.Context, l Layer, fetch func(context.Context, Layer) (io.ReadCloser, error)) (*layerReader, error) {
	return b.openBlobWith(ctx, l, fetch, nil)
}

// openBlobWith is openBlob with what the reader of the layer's previous part
// left (its decoder and buffers), which it takes whatever the outcome.
func (b *Bundle) openBlobWith(ctx context.Context, l Layer, fetch func(context.Context, Layer) (io.ReadCloser, error), reuse *codec.Reuse) (*layerReader, error) {
	rc, err := fetch(ctx, l)
	if err != nil {
		reuse.Close()
		return nil, err
	}
	v, err := newVerifier(rc, l.Descriptor, string(l.Kind))
	if err != nil {
		rc.Close()
		reuse.Close()
		return nil, err
	}
	var identities []age.Identity
	if l.Encrypted {
		identities = b.identities
	}
	r, err := codec.NewLayerReader(codecBlob(v, rc.Close), identities, reuse)
	if err != nil {
		return nil, l.codecErr(err)
	}
	return &layerReader{l: l, r: r}, nil
}

// fetch opens the stored blob, with pull progress.
func (b *Bundle) fetch(ctx context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := b.fetchRaw(ctx, l)
	if err != nil {
		return nil, err
	}
	id := "pull " + string(l.Kind)
	b.progress.Start(id, id, l.Descriptor.Size)
	p := b.progress
	return &progressReadCloser{CountingReader: pipe.CountingReader{R: rc, OnRead: func(n int64) { p.Add(id, n) }}, p: p, id: id, c: rc}, nil
}

// fetchPart opens the blob of one part: its bytes count in the layer's
// progress step, which the caller started and ends.
func (b *Bundle) fetchPart(ctx context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := b.fetchRaw(ctx, l)
	if err != nil {
		return nil, err
	}
	return b.countPart(l, rc), nil
}

// countPart counts what rc reads in l's progress step.
func (b *Bundle) countPart(l Layer, rc io.ReadCloser) io.ReadCloser {
	id, p := "pull "+string(l.Kind), b.progress
	return &struct {
		pipe.CountingReader
		io.Closer
	}{pipe.CountingReader{R: rc, OnRead: func(n int64) { p.Add(id, n) }}, rc}
}

func (b *Bundle) fetchRaw(ctx context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := b.src.Fetch(ctx, l.Descriptor)
	return rc, l.fetchErr(err)
}

// fetchErr is a failed fetch of l's blob, a missing blob typed.
func (l Layer) fetchErr(err error) error {
	if err == nil {
		return nil
	}
	if oci.IsNotFound(err) {
		return &MissingBlobError{Blob: string(l.Kind) + " layer", Digest: l.Descriptor.Digest.String(), Err: err}
	}
	return fmt.Errorf("fetch %s layer %s: %w", l.Kind, l.Descriptor.Digest, err)
}

// part is the layer of one part, as openBlob reads it.
func (l Layer) part(i int) Layer {
	l.Descriptor, l.Parts = l.Parts[i], l.Parts[i:i+1]
	return l
}

// partsReader joins the plaintexts of a layer's parts. Each part is read as
// a layer of its own: it ends with io.EOF only once its blob verified and
// its age and zstd streams ended cleanly; only then are the next part's
// bytes handed on.
//
// The next part is opened ahead: as soon as the fetch of the current part
// read its blob to the end, a goroutine opens the next one (its GET, its age
// header, its pipeline), which reads ahead into its own buffers while the
// stages after the fetch finish the current part. Opened at the boundary
// instead, every part began with its pipeline empty: the GET, the header and
// the first batch went through each stage before the consumer had a byte
// again, 5-8 ms per part of 128 MiB on loopback, 4% of the pull (a trace of
// a GiB in 8 parts, issue 39). An error of the part opened ahead (a missing
// blob, a header that fails) is reported only once the part before it
// verified. The two parts' readers take turns with two sets of buffers and
// decoders: the one the part before the current one left is the next one's.
type partsReader struct {
	ctx context.Context
	b   *Bundle
	l   Layer
	id  string
	seq *lockedSequence
	cur *layerReader // the reader of part i
	err error

	mu      sync.Mutex
	i       int             // the part cur reads; written under mu
	fetched int             // the last part whose fetch reached its end
	ahead   chan openedPart // part i+1 being opened ahead, or nil
	spare   *codec.Reuse    // what part i-1 left, for part i+1
	noAhead bool            // draining or closed: nothing more is opened ahead
}

// openedPart is the outcome of opening a part ahead.
type openedPart struct {
	lr  *layerReader
	err error
}

// open opens part i with what a reader before it left.
func (r *partsReader) open(i int, reuse *codec.Reuse) (*layerReader, error) {
	return r.b.openBlobWith(r.ctx, r.l.part(i), func(_ context.Context, l Layer) (io.ReadCloser, error) {
		rc, err := r.seq.Next()
		if err != nil {
			return nil, l.fetchErr(err)
		}
		return &fetchEnd{ReadCloser: r.b.countPart(l, rc), end: func() { r.fetchEnded(i) }}, nil
	}, reuse)
}

// first opens part 0.
func (r *partsReader) first() error {
	lr, err := r.open(0, nil)
	if err != nil {
		return err
	}
	r.cur = lr
	r.mu.Lock()
	r.openAhead()
	r.mu.Unlock()
	return nil
}

// fetchEnded is called, in the fetch stage's goroutine, when part i's blob
// was read to its end.
func (r *partsReader) fetchEnded(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetched = i
	r.openAhead()
}

// openAhead starts opening part i+1 once part i's fetch ended, when no part
// is being opened ahead already. Called with mu held.
func (r *partsReader) openAhead() {
	if r.noAhead || r.ahead != nil || r.fetched != r.i || r.i+1 >= len(r.l.Parts) {
		return
	}
	next, reuse := r.i+1, r.spare
	r.spare = nil
	ch := make(chan openedPart, 1)
	r.ahead = ch
	go func() {
		lr, err := r.open(next, reuse)
		ch <- openedPart{lr: lr, err: err}
	}()
}

// takeAhead stops opening parts ahead and returns the part being opened
// ahead, if any, once opened.
func (r *partsReader) takeAhead() (openedPart, bool) {
	r.mu.Lock()
	r.noAhead = true
	ahead := r.ahead
	r.ahead = nil
	r.mu.Unlock()
	if ahead == nil {
		return openedPart{}, false
	}
	return <-ahead, true
}

// advance moves to the next part, after cur ended.
func (r *partsReader) advance() error {
	reuse := r.cur.detach()
	r.cur = nil
	r.mu.Lock()
	r.i++
	ahead := r.ahead
	r.ahead = nil
	if ahead != nil {
		r.spare = reuse
	}
	r.mu.Unlock()
	var next openedPart
	if ahead != nil {
		next = <-ahead
	} else {
		next.lr, next.err = r.open(r.i, reuse)
	}
	if next.err != nil {
		return next.err
	}
	r.cur = next.lr
	r.mu.Lock()
	r.openAhead()
	r.mu.Unlock()
	return nil
}

func (r *partsReader) Read(p []byte) (int, error) {
	b, err := r.Next(len(p))
	return copy(p, b), err
}

// Next is layerReader.Next over the parts in turn.
func (r *partsReader) Next(max int) ([]byte, error) {
	for r.err == nil {
		b, err := r.cur.Next(max)
		switch {
		case err == nil:
			return b, nil
		case !errors.Is(err, io.EOF):
			r.err = err
		case r.i+1 == len(r.l.Parts):
			r.err = io.EOF
		default:
			if oerr := r.advance(); oerr != nil {
				r.err = oerr
			}
		}
		if len(b) > 0 || r.err != nil {
			return b, r.err
		}
	}
	return nil, r.err
}

// DrainStored checks the stored bytes of the rest of the layer: the current
// part's and every later part's (see files.StoredDrainer).
func (r *partsReader) DrainStored() error {
	r.mu.Lock()
	r.noAhead = true // what the drain reads, it reads in order
	r.mu.Unlock()
	if r.cur != nil {
		if err := r.cur.DrainStored(); err != nil {
			return err
		}
	}
	from := r.i + 1
	if next, ok := r.takeAhead(); ok {
		from++
		if next.err != nil {
			// A part that failed to open was drained to find the root
			// cause: its stored bytes verified unless that is the error.
			var de *DecryptError
			if !errors.As(next.err, &de) {
				return next.err
			}
		} else {
			err := next.lr.DrainStored()
			next.lr.Close()
			if err != nil {
				return err
			}
		}
	}
	for i := from; i < len(r.l.Parts); i++ {
		if err := r.b.verifyBlobStored(r.ctx, r.l.part(i), r.fetch); err != nil {
			return err
		}
	}
	return nil
}

// fetch opens the sequence's next blob, which is l's.
func (r *partsReader) fetch(_ context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := r.seq.Next()
	if err != nil {
		return nil, l.fetchErr(err)
	}
	return r.b.countPart(l, rc), nil
}

func (r *partsReader) Close() error {
	var err error
	if r.cur != nil {
		err = r.cur.Close()
		r.cur = nil
	}
	r.mu.Lock()
	r.noAhead = true
	r.mu.Unlock()
	// Closing the sequence ends the fetch of a part being opened ahead.
	r.seq.Close()
	if next, ok := r.takeAhead(); ok && next.lr != nil {
		next.lr.Close()
	}
	r.mu.Lock()
	spare := r.spare
	r.spare = nil
	r.mu.Unlock()
	spare.Close()
	var done error
	if !errors.Is(r.err, io.EOF) {
		done = r.err
	}
	r.b.progress.Done(r.id, done)
	return err
}

// fetchEnd calls end once, when its blob was read to the end.
type fetchEnd struct {
	io.ReadCloser
	end  func()
	once sync.Once
}

func (f *fetchEnd) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if err == io.EOF {
		f.once.Do(f.end)
	}
	return n, err
}

// lockedSequence is an oci.Sequence whose part opened ahead may call Next
// while the reader closes it: after Close, Next fails.
type lockedSequence struct {
	mu     sync.Mutex
	seq    oci.Sequence
	closed bool
}

func (s *lockedSequence) Next() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the layer's reader was closed")
	}
	return s.seq.Next()
}

func (s *lockedSequence) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.seq.Close()
}

// progressReadCloser reports a layer's bytes to its progress step, and the
// step's end when closed.
type progressReadCloser struct {
	pipe.CountingReader
	p    Progress
	id   string
	c    io.Closer
	done bool
}

func (p *progressReadCloser) Close() error {
	if !p.done {
		p.done = true
		p.p.Done(p.id, nil)
	}
	return p.c.Close()
}

// layerReader is the codec's reader of one blob, with its failures as this
// package's typed errors.
type layerReader struct {
	l Layer
	r *codec.LayerReader
}

func (l *layerReader) Read(p []byte) (int, error) {
	b, err := l.Next(len(p))
	return copy(p, b), err
}

// Next returns up to max bytes of the plaintext without a copy (see
// files.Lender): valid until the next call of Next or Read, or Close. Its
// errors are Read's.
func (l *layerReader) Next(max int) ([]byte, error) {
	b, err := l.r.Next(max)
	return b, l.l.codecErr(err)
}

// DrainStored reads the rest of the stored blob without decompressing it and
// returns its integrity error, if any (see files.StoredDrainer).
func (l *layerReader) DrainStored() error { return l.l.codecErr(l.r.DrainStored()) }

func (l *layerReader) Close() error { return l.r.Close() }

// detach closes a layer reader that reached its end but keeps its decoder
// and buffers for the next part's.
func (l *layerReader) detach() *codec.Reuse { return l.r.Detach() }
