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
