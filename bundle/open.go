package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
)

// OpenOptions configure Open.
type OpenOptions struct {
	Registry oci.RegistryOptions
	// Identities decrypt the layers; without them only the metadata and the
	// stored bytes can be read (inspect, digest checks).
	Identities []age.Identity
	Progress   Progress
	// Signers are the trusted signing keys. Open refuses (a *SignatureError)
	// a bundle that no valid signature by one of them names, before it reads
	// anything of the bundle but its manifest descriptor: no signer given
	// means no bundle is accepted, unless AllowUnsigned.
	Signers []sign.Key
	// AllowUnsigned skips the signature check: whoever could push to the
	// tag made the bundle.
	AllowUnsigned bool
	// ListSignatures looks for signatures and reports them in
	// Bundle.Signature (verified against Signers, if any) without
	// requiring one (bundle inspect).
	ListSignatures bool
}

// Bundle is an opened bundle: its manifest and metadata are fetched, verified
// against their digests and decoded strictly; layers are streamed on demand.
type Bundle struct {
	// Reference is the reference that was opened.
	Reference string
	// Descriptor is the manifest's descriptor (its digest names the bundle).
	Descriptor ocispec.Descriptor
	Manifest   ocispec.Manifest
	Metadata   *Metadata
	Layers     []Layer
	// Signature is what the signature check found.
	Signature *SignatureStatus

	// FilesChecked is what Verify found in the files layer (nil before):
	// its longest path and largest extended attribute, for the checks of
	// the target before a write.
	FilesChecked *files.Summary

	src        oci.Source
	identities []age.Identity
	progress   Progress
}

// Layer is one layer of the manifest.
type Layer struct {
	Kind LayerKind
	// Known is false for a layer kind added by a newer minor version: it is
	// verified but not decoded.
	Known      bool
	Encrypted  bool
	Descriptor ocispec.Descriptor
	// Parts are the layer's blobs in order, Parts[0] being Descriptor: one,
	// or (format 1.2, the files layer) several whose plaintexts, joined,
	// are the layer's.
	Parts []ocispec.Descriptor
}

// Size is the stored size of the layer: the sum of its parts.
func (l Layer) Size() int64 {
	var n int64
	for _, p := range l.Parts {
		n += p.Size
	}
	return n
}

const maxManifestBytes = 4 << 20

// Open resolves ref and reads its manifest and metadata. It refuses anything
// that is not a bundle of a supported major version before any layer is read.
func Open(ctx context.Context, ref string, opts OpenOptions) (*Bundle, error) {
	r, err := oci.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	src, err := oci.NewSource(ctx, r, opts.Registry)
	if err != nil {
		return nil, err
	}
	b, err := OpenSource(ctx, src, opts)
	if err != nil {
		src.Close()
		return nil, err
	}
	return b, nil
}

// Close releases the bundle's source (an archive's open file).
func (b *Bundle) Close() error { return b.src.Close() }

// OpenSource is Open on an already opened source; Close closes src.
func OpenSource(ctx context.Context, src oci.Source, opts OpenOptions) (*Bundle, error) {
	desc, err := src.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, &FormatError{What: "manifest", Err: fmt.Errorf("%s is a %q, not an OCI image manifest", src.Reference(), desc.MediaType)}
	}
	// The signature first: nothing of an unsigned bundle is read.
	sig, err := checkSignature(ctx, src, desc, opts)
	if err != nil {
		return nil, err
	}
	mb, err := fetchSmall(ctx, src, desc, "manifest")
	if err != nil {
		return nil, err
	}
	b := &Bundle{Reference: src.Reference().String(), Descriptor: desc, Signature: sig, src: src, identities: opts.Identities, progress: progressOrNop(opts.Progress)}
	newerMinor, err := b.decodeManifest(mb)
	if err != nil {
		return nil, err
	}
	cb, err := fetchSmall(ctx, src, b.Manifest.Config, "config")
	if err != nil {
		return nil, err
	}
	if b.Metadata, err = decodeMetadata(cb, newerMinor); err != nil {
		return nil, err
	}
	if v, err := parseVersion(b.Metadata.FormatVersion); err != nil {
		return nil, &FormatError{What: "metadata (config blob)", Err: err}
	} else if ours, _ := parseVersion(FormatVersion); v.major != ours.major {
		return nil, &UnsupportedVersionError{Version: b.Metadata.FormatVersion}
	}
	if a := b.Manifest.Annotations[AnnotationFormatVersion]; a != b.Metadata.FormatVersion {
		return nil, &VersionMismatchError{Manifest: a, Metadata: b.Metadata.FormatVersion}
	}
	// What the metadata declares caps what the layers may expand to: a layer
	// without its summary cannot be bounded.
	if l, ok := b.Layer(LayerFiles); ok {
		if b.Metadata.Files == nil {
			return nil, &FormatError{What: "metadata (config blob)", Err: errors.New("the bundle has a files layer but the metadata does not declare its counts and size")}
		}
		want := b.Metadata.Files.Parts
		if want == 0 {
			want = 1
		}
		if len(l.Parts) != want {
			return nil, &FormatError{What: "manifest", Err: fmt.Errorf("the files layer has %d parts, the metadata declares %d", len(l.Parts), b.Metadata.Files.Parts)}
		}
	}
	for _, l := range b.Layers {
		if l.Encrypted != (b.Metadata.Encryption.Scheme == EncryptionAge) {
			return nil, &FormatError{What: "manifest", Err: fmt.Errorf("the %s layer's encryption does not match the metadata's scheme %q", l.Kind, b.Metadata.Encryption.Scheme)}
		}
	}
	return b, nil
}

// decodeManifest checks what makes this a bundle, in an order that gives the
// most useful error first: artifactType, then version, then strict decoding.
func (b *Bundle) decodeManifest(mb []byte) (newerMinor bool, err error) {
	var loose ocispec.Manifest
	if err := json.Unmarshal(mb, &loose); err != nil {
		return false, &FormatError{What: "manifest", Err: err}
	}
	if loose.ArtifactType != ArtifactType {
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("artifactType %q: not a kubectl-assisted bundle (want %q)", loose.ArtifactType, ArtifactType)}
	}
	v, ok := loose.Annotations[AnnotationFormatVersion]
	if !ok {
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("annotation %s is missing", AnnotationFormatVersion)}
	}
	if newerMinor, err = checkVersion(v); err != nil {
		return false, err
	}
	dec := json.NewDecoder(bytes.NewReader(mb))
	if !newerMinor {
		dec.DisallowUnknownFields()
	}
	var m ocispec.Manifest
	if err := dec.Decode(&m); err != nil {
		return false, &FormatError{What: "manifest", Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return false, &FormatError{What: "manifest", Err: errors.New("trailing data after the JSON object")}
	}
	switch {
	case m.SchemaVersion != 2:
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("schemaVersion %d, want 2", m.SchemaVersion)}
	case m.MediaType != ocispec.MediaTypeImageManifest:
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("mediaType %q, want %q", m.MediaType, ocispec.MediaTypeImageManifest)}
	case m.Config.MediaType != ConfigMediaType:
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("config mediaType %q, want %q", m.Config.MediaType, ConfigMediaType)}
	case m.Config.Size > maxMetadataBytes:
		return false, &FormatError{What: "manifest", Err: fmt.Errorf("config of %d bytes is over the %d limit", m.Config.Size, maxMetadataBytes)}
	}
	// Format 1.2 lets the files layer be several blobs in a row (parts).
	parts := false
	if got, err := parseVersion(v); err == nil && got.minor >= 2 {
		parts = true
	}
	seen := map[LayerKind]bool{}
	for _, d := range m.Layers {
		kind, enc, known, err := ParseLayerMediaType(d.MediaType)
		if err != nil {
			return false, &FormatError{What: "manifest", Err: err}
		}
		if !known && !newerMinor {
			return false, &FormatError{What: "manifest", Err: fmt.Errorf("unknown layer kind %q in format %s", kind, v)}
		}
		if d.Size < 0 {
			return false, &FormatError{What: "manifest", Err: fmt.Errorf("%s layer has a negative size", kind)}
		}
		if seen[kind] {
			last := &b.Layers[len(b.Layers)-1]
			switch {
			case !parts || kind != LayerFiles:
				return false, &FormatError{What: "manifest", Err: fmt.Errorf("two %s layers", kind)}
			case last.Kind != kind:
				return false, &FormatError{What: "manifest", Err: errors.New("the parts of the files layer are not consecutive")}
			case d.MediaType != last.Descriptor.MediaType:
				return false, &FormatError{What: "manifest", Err: fmt.Errorf("the parts of the files layer differ in media type (%q, %q)", last.Descriptor.MediaType, d.MediaType)}
			case len(last.Parts) == maxFilesParts:
				return false, &FormatError{What: "manifest", Err: fmt.Errorf("the files layer has more than %d parts", maxFilesParts)}
			}
			last.Parts = append(last.Parts, d)
			continue
		}
		seen[kind] = true
		b.Layers = append(b.Layers, Layer{Kind: kind, Known: known, Encrypted: enc, Descriptor: d, Parts: []ocispec.Descriptor{d}})
	}
	b.Manifest = m
	return newerMinor, nil
}

func fetchSmall(ctx context.Context, src oci.Source, desc ocispec.Descriptor, what string) ([]byte, error) {
	if desc.Size > maxManifestBytes {
		return nil, &FormatError{What: what, Err: fmt.Errorf("%d bytes is over the %d limit", desc.Size, maxManifestBytes)}
	}
	rc, err := src.Fetch(ctx, desc)
	if err != nil {
		if what != "manifest" && oci.IsNotFound(err) {
			return nil, &MissingBlobError{Blob: what, Digest: desc.Digest.String(), Err: err}
		}
		return nil, fmt.Errorf("fetch %s %s: %w", what, desc.Digest, err)
	}
	defer rc.Close()
	v, err := newVerifier(rc, desc, what)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Layer returns the layer of a kind, if the bundle has one.
func (b *Bundle) Layer(kind LayerKind) (Layer, bool) {
	for _, l := range b.Layers {
		if l.Kind == kind {
			return l, true
		}
	}
	return Layer{}, false
}

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
	if len(l.Parts) > 1 {
		id := "pull " + string(l.Kind)
		b.progress.Start(id, id, l.Size())
		pr := &partsReader{ctx: ctx, b: b, l: l, id: id}
		if err := pr.next(nil); err != nil {
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
	id, p := "pull "+string(l.Kind), b.progress
	return &struct {
		pipe.CountingReader
		io.Closer
	}{pipe.CountingReader{R: rc, OnRead: func(n int64) { p.Add(id, n) }}, rc}, nil
}

func (b *Bundle) fetchRaw(ctx context.Context, l Layer) (io.ReadCloser, error) {
	rc, err := b.src.Fetch(ctx, l.Descriptor)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, &MissingBlobError{Blob: string(l.Kind) + " layer", Digest: l.Descriptor.Digest.String(), Err: err}
		}
		return nil, fmt.Errorf("fetch %s layer %s: %w", l.Kind, l.Descriptor.Digest, err)
	}
	return rc, nil
}

// part is the layer of one part, as openBlob reads it.
func (l Layer) part(i int) Layer {
	l.Descriptor, l.Parts = l.Parts[i], l.Parts[i:i+1]
	return l
}

// partsReader joins the plaintexts of a layer's parts. Each part is read as
// a layer of its own: it ends with io.EOF only once its blob verified and
// its age and zstd streams ended cleanly; then the next part is opened.
type partsReader struct {
	ctx context.Context
	b   *Bundle
	l   Layer
	id  string
	i   int // the part cur reads
	cur *layerReader
	err error
}

func (r *partsReader) next(reuse *codec.Reuse) error {
	lr, err := r.b.openBlobWith(r.ctx, r.l.part(r.i), r.b.fetchPart, reuse)
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
		if err := r.b.verifyPartStored(r.ctx, r.l.part(i)); err != nil {
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
