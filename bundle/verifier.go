package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// verifier checks a blob's size and digest as it streams. Read never returns
// io.EOF before both match: the end of a bad blob is an *IntegrityError, so a
// consumer that commits at EOF (a database transaction, a staged directory)
// never commits altered content.
type verifier struct {
	r    io.Reader
	desc ocispec.Descriptor
	blob string
	h    hash.Hash
	n    int64
	err  error
}

func newVerifier(r io.Reader, desc ocispec.Descriptor, blob string) (*verifier, error) {
	if desc.Digest.Algorithm() != digest.SHA256 || desc.Digest.Validate() != nil {
		return nil, &FormatError{What: blob + " descriptor", Err: fmt.Errorf("digest %q is not a valid sha256 digest", desc.Digest)}
	}
	if desc.Size < 0 {
		return nil, &FormatError{What: blob + " descriptor", Err: fmt.Errorf("negative size %d", desc.Size)}
	}
	// Read one byte past the size to notice a blob that is too long.
	return &verifier{r: io.LimitReader(r, desc.Size+1), desc: desc, blob: blob, h: sha256.New()}, nil
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if serr := v.sum(p[:n], err); serr != nil || err == nil {
		err = serr
	}
	if v.err != nil && v.n > v.desc.Size {
		n = 0 // past the size: none of it is handed on
	}
	return n, err
}

// sum checks b, the next bytes of the blob, and err, the error that came
// with them: it returns the error to hand on (nil while the blob goes on,
// io.EOF at an end that verified), and keeps returning it once the blob
// ended or failed. It is the codec's Tap of the blob's raw bytes (raw): for
// an encrypted blob it runs in a goroutine of its own, beside the reads.
func (v *verifier) sum(b []byte, err error) error {
	if v.err != nil {
		return v.err
	}
	if len(b) > 0 {
		v.n += int64(len(b))
		if v.n > v.desc.Size {
			v.err = v.mismatch(ReasonSize, "more than "+strconv.FormatInt(v.desc.Size, 10)+" bytes", strconv.FormatInt(v.desc.Size, 10)+" bytes")
			return v.err
		}
		v.h.Write(b)
	}
	if errors.Is(err, io.EOF) {
		v.err = v.check()
		if v.err == nil {
			v.err = io.EOF
		}
		return v.err
	}
	if err != nil {
		v.err = &SourceError{Blob: v.blob, Err: err}
	}
	return v.err
}

// raw is the blob's bytes unchecked, up to one past its size (to notice a
// blob that is too long): what sum checks.
func (v *verifier) raw() io.Reader { return v.r }

func (v *verifier) check() error {
	if v.n != v.desc.Size {
		return v.mismatch(ReasonSize, strconv.FormatInt(v.n, 10)+" bytes", strconv.FormatInt(v.desc.Size, 10)+" bytes")
	}
	if got := "sha256:" + hex.EncodeToString(v.h.Sum(nil)); got != v.desc.Digest.String() {
		return v.mismatch(ReasonDigest, got, v.desc.Digest.String())
	}
	return nil
}

func (v *verifier) mismatch(reason, got, want string) error {
	return &IntegrityError{Blob: v.blob, Digest: v.desc.Digest.String(), Reason: reason, Got: got, Want: want}
}
