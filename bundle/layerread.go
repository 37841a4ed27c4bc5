package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"

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
		pr := &partsReader{ctx: ctx, b: b, l: l, id: id, seq: oci.FetchSequence(ctx, b.src, l.Parts)}
		if err := pr.next(nil); err != nil {
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
// its age and zstd streams ended cleanly; then the next part is opened. The
// parts' blobs come from one oci.Sequence, which fetches ahead of the reader
// across the parts' boundaries.
type partsReader struct {
	ctx context.Context
	b   *Bundle
	l   Layer
	id  string
	seq oci.Sequence
	i   int // the part cur reads
	cur *layerReader
	err error
}

// fetch opens the sequence's next blob, which is l's.
func (r *partsReader) fetch(_ context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := r.seq.Next()
	if err != nil {
		return nil, l.fetchErr(err)
	}
	return r.b.countPart(l, rc), nil
}

func (r *partsReader) next(reuse *codec.Reuse) error {
	lr, err := r.b.openBlobWith(r.ctx, r.l.part(r.i), r.fetch, reuse)
	if err != nil {
		return err
	}
	r.cur = lr
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
			reuse := r.cur.detach()
			r.cur = nil
			r.i++
			if oerr := r.next(reuse); oerr != nil {
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
	if r.cur != nil {
		if err := r.cur.DrainStored(); err != nil {
			return err
		}
	}
	for i := r.i + 1; i < len(r.l.Parts); i++ {
		r.i = i
		if err := r.b.verifyBlobStored(r.ctx, r.l.part(i), r.fetch); err != nil {
			return err
		}
	}
	return nil
}

func (r *partsReader) Close() error {
	var err error
	if r.cur != nil {
		err = r.cur.Close()
		r.cur = nil
	}
	r.seq.Close()
	var done error
	if !errors.Is(r.err, io.EOF) {
		done = r.err
	}
	r.b.progress.Done(r.id, done)
	return err
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
