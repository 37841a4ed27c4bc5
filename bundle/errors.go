package bundle

import (
	"errors"
	"fmt"
)

// IntegrityError says a blob's bytes do not match its descriptor: the content
// was altered or cut in storage or on the way.
type IntegrityError struct {
	// Blob names the blob: "manifest", "config" or the layer kind.
	Blob   string
	Digest string
	// Reason is "digest mismatch" or "size mismatch".
	Reason string
	Got    string
	Want   string
}

// Integrity failure reasons.
const (
	ReasonDigest = "digest mismatch"
	ReasonSize   = "size mismatch"
	// ReasonTampered is ciphertext whose digest matches its descriptor (the
	// descriptor was rewritten too) but that fails age's authentication: the
	// key was right, the bytes were altered.
	ReasonTampered = "the ciphertext fails authentication"
)

func (e *IntegrityError) Error() string {
	if e.Got == "" && e.Want == "" {
		return fmt.Sprintf("%s blob %s: %s (the content was altered after it was encrypted)", e.Blob, e.Digest, e.Reason)
	}
	return fmt.Sprintf("%s blob %s: %s: got %s, want %s (the stored content was altered or truncated)", e.Blob, e.Digest, e.Reason, e.Got, e.Want)
}

// MissingBlobError is a blob the manifest references that the registry or
// layout does not hold.
type MissingBlobError struct {
	Blob   string
	Digest string
	Err    error
}

func (e *MissingBlobError) Error() string {
	return fmt.Sprintf("%s blob %s is missing from the registry or layout: %v", e.Blob, e.Digest, e.Err)
}
func (e *MissingBlobError) Unwrap() error { return e.Err }

// VersionMismatchError is a bundle whose manifest annotation and metadata
// name different format versions: one of them was edited.
type VersionMismatchError struct{ Manifest, Metadata string }

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("inconsistent format versions: the manifest annotation says %s, the metadata says %s", e.Manifest, e.Metadata)
}

// UnsupportedVersionError is a bundle of a format major version this program
// does not read.
type UnsupportedVersionError struct{ Version string }

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("bundle format version %s is not supported: this kubectl-assisted reads format %s.x; use a kubectl-assisted that supports format %s", e.Version, majorOf(FormatVersion), majorOf(e.Version))
}

func majorOf(v string) string {
	p, err := parseVersion(v)
	if err != nil {
		return v
	}
	return fmt.Sprint(p.major)
}

// FormatError is content that does not decode as the format says: not a
// bundle, a malformed manifest or metadata, a corrupt stream.
type FormatError struct {
	What string
	Err  error
}

func (e *FormatError) Error() string { return fmt.Sprintf("invalid %s: %v", e.What, e.Err) }
func (e *FormatError) Unwrap() error { return e.Err }

// DecryptError is a layer that cannot be decrypted: no identity given, or none
// of them is a recipient, or the ciphertext fails authentication.
type DecryptError struct {
	Layer LayerKind
	Err   error
}

func (e *DecryptError) Error() string { return fmt.Sprintf("decrypt %s layer: %v", e.Layer, e.Err) }
func (e *DecryptError) Unwrap() error { return e.Err }

// ErrNoIdentity is returned when an encrypted layer is read without identities.
var ErrNoIdentity = errors.New("the layer is encrypted and no identity was given (--identity)")

// SourceError is a failure to read stored bytes (network, disk), as opposed to
// bytes that were read but are wrong.
type SourceError struct {
	Blob string
	Err  error
}

func (e *SourceError) Error() string { return fmt.Sprintf("read %s blob: %v", e.Blob, e.Err) }
func (e *SourceError) Unwrap() error { return e.Err }
