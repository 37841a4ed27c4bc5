package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Database decodes the database layer strictly; nil checks only its
	// digest, decryption and compression.
	Database DatabaseChecker
	// PreserveSpecialBits accepts setuid, setgid and sticky bits in the files
	// layer, as the extraction that follows will (files.Rules).
	PreserveSpecialBits bool
}

// VerifyReport is what Verify checked; its json form is part of `bundle verify -o json`.
type VerifyReport struct {
	Reference     string `json:"reference"`
	Digest        string `json:"digest"`
	FormatVersion string `json:"formatVersion"`
	// Signature is what Open found of the bundle's signature.
	Signature *SignatureStatus `json:"signature,omitempty"`
	Layers    []LayerReport    `json:"layers"`
}

// LayerReport is one verified layer.
type LayerReport struct {
	Kind LayerKind `json:"kind"`
	// Digest is the layer's blob's, or its first part's; Size the sum of
	// its parts, Parts their number when more than one.
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Parts     int    `json:"parts,omitempty"`
	Encrypted bool   `json:"encrypted"`
	// Decoded is true when the plaintext was decrypted and decoded strictly;
	// false means only the stored bytes were checked (no identity, or a kind
	// of a newer minor version).
	Decoded    bool  `json:"decoded"`
	PlainBytes int64 `json:"plainBytes,omitempty"`
	// Entries counts tar entries (files) or objects (resources).
	Entries int64 `json:"entries,omitempty"`
}

// Verify reads every layer to its end: each blob's size and digest (the
// manifest and config were checked by Open), and, with identities, decryption
// and strict decoding of the content (tar entries checked by the same rules as
// extraction, resources parsed as objects). It stops at the first failure and
// returns its typed error. When identities are given and none matches a
// recipient fingerprint in the metadata, it fails before downloading a layer.
func (b *Bundle) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Reference: b.Reference, Digest: b.Descriptor.Digest.String(), FormatVersion: b.Metadata.FormatVersion, Signature: b.Signature}
	if err := b.checkIdentities(); err != nil {
		return rep, err
	}
	// The database layer goes last: its statements are parsed by PostgreSQL's
	// own parser, run as wasm, whose compilation costs a second or more of CPU
	// per process; a bundle refused for another layer never pays it. The
	// report keeps the manifest's order.
	reports := make([]LayerReport, len(b.Layers))
	for _, i := range verifyOrder(b.Layers) {
		l := b.Layers[i]
		lr := LayerReport{Kind: l.Kind, Digest: l.Descriptor.Digest.String(), Size: l.Size(), Encrypted: l.Encrypted}
		if len(l.Parts) > 1 {
			lr.Parts = len(l.Parts)
		}
		var err error
		if !l.Known || (l.Encrypted && len(b.identities) == 0) {
			err = b.verifyStored(ctx, l)
		} else {
			err = b.verifyDecoded(ctx, l, &lr, opts)
		}
		if err != nil {
			return rep, err
		}
		reports[i] = lr
	}
	rep.Layers = reports
	return rep, nil
}

// verifyOrder is the order in which Verify reads the layers: every other
// layer before the database layer.
func verifyOrder(layers []Layer) []int {
	var first, last []int
	for i, l := range layers {
		if l.Kind == LayerDatabase {
			last = append(last, i)
		} else {
			first = append(first, i)
		}
	}
	return append(first, last...)
}

func (b *Bundle) verifyStored(ctx context.Context, l Layer) error {
	if len(l.Parts) > 1 {
		id := "pull " + string(l.Kind)
		b.progress.Start(id, id, l.Size())
		var err error
		for i := range l.Parts {
			if err = b.verifyPartStored(ctx, l.part(i)); err != nil {
				break
			}
		}
		b.progress.Done(id, err)
		return err
	}
	return b.verifyBlobStored(ctx, l, b.fetch)
}

// verifyPartStored checks one part's stored bytes (within the layer's step).
func (b *Bundle) verifyPartStored(ctx context.Context, l Layer) error {
	return b.verifyBlobStored(ctx, l, b.fetchPart)
}

func (b *Bundle) verifyBlobStored(ctx context.Context, l Layer, fetch func(context.Context, Layer) (io.ReadCloser, error)) error {
	rc, err := fetch(ctx, l)
	if err != nil {
		return err
	}
	defer rc.Close()
	v, err := newVerifier(rc, l.Descriptor, string(l.Kind))
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, v); err != nil {
		return err
	}
	return nil
}

func (b *Bundle) verifyDecoded(ctx context.Context, l Layer, lr *LayerReport, opts VerifyOptions) error {
	rc, err := b.openLayer(ctx, l)
	if err != nil {
		return err
	}
	defer rc.Close()
	cr := &pipe.CountingReader{R: rc}
	switch l.Kind {
	case LayerFiles:
		sum, err := files.CheckRules(ctx, cr, b.FilesRules(opts.PreserveSpecialBits))
		if err != nil {
			return filesLayerErr(err)
		}
		lr.Entries = sum.Files + sum.Dirs + sum.Symlinks + sum.HardLinks
		b.FilesChecked = sum
	case LayerResources:
		objs, err := resources.Decode(cr)
		if err != nil {
			return unwrapLayerErr(err)
		}
		lr.Entries = int64(len(objs))
		if err := b.checkObjectCount(len(objs)); err != nil {
			return err
		}
	case LayerDatabase:
		if opts.Database != nil {
			if err := opts.Database(ctx, cr); err != nil {
				return unwrapLayerErr(err)
			}
		}
		if _, err := io.Copy(io.Discard, cr); err != nil {
			return err
		}
	}
	lr.Decoded, lr.PlainBytes = true, cr.N
	return nil
}

// FilesRules are the extraction rules of this bundle's files layer: capped at
// what the metadata declares.
func (b *Bundle) FilesRules(preserveSpecialBits bool) files.Rules {
	r := files.Rules{PreserveSpecialBits: preserveSpecialBits, Declared: &files.Declared{}}
	if m := b.Metadata.Files; m != nil {
		r.Declared = &files.Declared{Files: m.Files, Dirs: m.Dirs, Symlinks: m.Symlinks, HardLinks: m.HardLinks, Bytes: m.Bytes}
		if b, ok := b.FilesBounds(); ok {
			r.Bounds = &b
		}
	}
	return r
}

// FilesBounds are the largest entry's path and extended attributes as the
// metadata declares them (format 1.1); ok is false when it does not (an
// older bundle: only reading the layer tells them, see Verify).
func (b *Bundle) FilesBounds() (files.Bounds, bool) {
	m := b.Metadata.Files
	if m == nil || m.LongestPath <= 0 {
		return files.Bounds{}, false
	}
	return files.Bounds{LongestName: m.LongestPath, LargestXattrs: m.LargestXattrs}, true
}

// OnePass reports whether an extraction can read each layer once, checking
// as it writes into its private staging area, instead of verifying every
// layer before a second read: every layer is of a kind the extraction reads
// whole (so none is left unchecked), and the files layer, if any, has
// declared bounds, so that the target is checked before the first write as
// Verify's findings would have let it be.
func (b *Bundle) OnePass() bool {
	for _, l := range b.Layers {
		switch {
		case !l.Known:
			return false
		case l.Kind == LayerFiles:
			if m := b.Metadata.Files; m == nil {
				return false
			} else if bounds, ok := b.FilesBounds(); ok && !bounds.WithinLimits() {
				return false // verified first: the entry beyond them is refused with its own reason
			} else if !ok && m.Files+m.Dirs+m.Symlinks+m.HardLinks > 0 {
				return false
			}
		case l.Kind == LayerDatabase, l.Kind == LayerResources:
		default:
			return false
		}
	}
	return true
}

// CheckIdentities fails, before any layer is downloaded, when identities
// were given and none is a recipient the metadata records.
func (b *Bundle) CheckIdentities() error { return b.checkIdentities() }

// filesLayerErr reports a layer that holds less than declared as a format
// error (more is refused entry by entry, as unsafe).
func filesLayerErr(err error) error {
	var cm *files.CountMismatchError
	if errors.As(err, &cm) {
		return &FormatError{What: "files layer", Err: cm}
	}
	return unwrapLayerErr(err)
}

func (b *Bundle) checkObjectCount(n int) error {
	if m := b.Metadata.Resources; m != nil && m.Objects != n {
		return &FormatError{What: "resources layer", Err: fmt.Errorf("holds %d objects, the metadata says %d", n, m.Objects)}
	}
	return nil
}

// ErrWrongIdentity is a DecryptError cause: the identities are not recipients.
var ErrWrongIdentity = errors.New("none of the given identities is a recipient of this bundle (wrong --identity)")

// checkIdentities compares the X25519 identities' fingerprints with the
// recipients recorded in the metadata (other identity types are left to age).
func (b *Bundle) checkIdentities() error {
	if len(b.identities) == 0 || len(b.Metadata.Encryption.Recipients) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, fp := range b.Metadata.Encryption.Recipients {
		want[fp] = true
	}
	for _, id := range b.identities {
		x, ok := id.(*age.X25519Identity)
		if !ok {
			return nil
		}
		if fp, err := RecipientFingerprint(x.Recipient()); err == nil && want[fp] {
			return nil
		}
	}
	var first LayerKind
	if len(b.Layers) > 0 {
		first = b.Layers[0].Kind
	}
	return &DecryptError{Layer: first, Err: ErrWrongIdentity}
}
