package bundle

import (
	"errors"
	"io"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
)

// How a layer's plaintext becomes its blob (zstd frames, age) and back is
// bundle/internal/codec's; this file is the format's side of it: the level
// each kind is compressed at, and the codec's failures as this package's
// typed errors.

// zstdLevel is the level a layer of the kind is compressed at: "fastest",
// but for the database layer, "default". The database engine writes most
// tables in COPY's binary format, which "fastest" shrinks less than text,
// and "default" shrinks further; the dump is bound by the server's COPY,
// which binary output sped up by more than the encoder slowed down
// (docs/architecture.md, "Measured choices").
func (k LayerKind) zstdLevel() zstd.EncoderLevel {
	if k == LayerDatabase {
		return zstd.SpeedDefault
	}
	return zstd.SpeedFastest
}

// NewCompressor returns the zstd encoder a layer of the kind is written with
// (the codec's fixed settings at the kind's level, independent frames
// compressed on every core) writing to w; Close ends the stream. It is for
// tools that measure or reproduce a layer's compression (make bench's
// database engine, in the test module).
func NewCompressor(w io.Writer, kind LayerKind) (io.WriteCloser, error) {
	return codec.NewCompressor(w, kind.zstdLevel())
}

// newLayerWriter writes a blob of kind into dst, encrypted to recipients.
func newLayerWriter(dst io.Writer, kind LayerKind, recipients []age.Recipient) (*codec.LayerWriter, error) {
	return codec.NewLayerWriter(dst, recipients, kind.zstdLevel())
}

// codecBlob is a verified blob as the codec's reader takes it.
func codecBlob(v *verifier, closeFn func() error) codec.Blob {
	return codec.Blob{R: v.raw(), Tap: v.sum, Close: closeFn, Cause: integrityOnly, Typed: typedErr}
}

// typedErr reports whether err is already one of this package's typed
// failures, which the codec passes on as it is.
func typedErr(err error) bool {
	var ie *IntegrityError
	var se *SourceError
	var de *DecryptError
	var fe *FormatError
	return errors.As(err, &ie) || errors.As(err, &se) || errors.As(err, &de) || errors.As(err, &fe)
}

// integrityOnly keeps an *IntegrityError, and drops every other error.
func integrityOnly(err error) error {
	var ie *IntegrityError
	if errors.As(err, &ie) {
		return ie
	}
	return nil
}

// codecErr names a failure of the codec in this package's terms: ciphertext
// altered after encryption is an *IntegrityError (ReasonTampered), a
// stream that does not decode a *FormatError, identities that are not
// recipients a *DecryptError (ErrWrongIdentity). The codec passes this
// package's own errors through, and they stay as they are.
func (l Layer) codecErr(err error) error {
	var te *codec.TamperedError
	var fe *codec.FormatError
	var nim *age.NoIdentityMatchError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return tampered(l, te.Err)
	case errors.As(err, &fe):
		return &FormatError{What: string(l.Kind) + " layer", Err: fe.Err}
	case errors.As(err, &nim):
		return &DecryptError{Layer: l.Kind, Err: ErrWrongIdentity}
	}
	return err
}

func tampered(l Layer, err error) error {
	return &IntegrityError{Blob: string(l.Kind), Digest: l.Descriptor.Digest.String(), Reason: ReasonTampered + ": " + err.Error()}
}
