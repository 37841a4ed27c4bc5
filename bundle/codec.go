package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// The encoder settings are fixed (not derived from the machine) because the
// output of klauspost/compress is stable only for equal code and options, and
// unencrypted bundles promise equal digests for equal input.
var encoderOptions = []zstd.EOption{
	zstd.WithEncoderLevel(zstd.SpeedFastest),
	zstd.WithEncoderConcurrency(2),
	zstd.WithEncoderCRC(true),
}

// encoderID names the encoder settings; a spool record made with other
// settings is not reused (its bytes would differ from what this code makes).
const encoderID = "zstd-fastest-crc;age-x25519"

// maxDecoderWindow bounds the memory a hostile stream can make the decoder use.
const maxDecoderWindow = 64 << 20

// layerWriter is zstd, then age when there are recipients, into dst. The
// encryption runs in its own goroutine (an AsyncWriter between the two), so
// compressing and encrypting use two cores; dst's own stages (hashing,
// storing, uploading) add more.
type layerWriter struct {
	zw  *zstd.Encoder
	aw  io.WriteCloser
	as  *pipe.AsyncWriter
	raw int64 // plaintext bytes written
}

// Sizes of the hand-off between zstd and age: whole age chunks.
const (
	encryptBufSize = 256 << 10
	encryptBufs    = 4
)

func newLayerWriter(dst io.Writer, recipients []age.Recipient) (*layerWriter, error) {
	lw := &layerWriter{}
	out := dst
	if len(recipients) > 0 {
		aw, err := age.Encrypt(dst, recipients...)
		if err != nil {
			return nil, fmt.Errorf("start encryption: %w", err)
		}
		lw.aw = aw
		lw.as = pipe.NewAsyncWriter(aw, encryptBufSize, encryptBufs)
		out = lw.as
	}
	zw, err := zstd.NewWriter(out, encoderOptions...)
	if err != nil {
		return nil, err
	}
	lw.zw = zw
	return lw, nil
}

func (w *layerWriter) Write(p []byte) (int, error) {
	n, err := w.zw.Write(p)
	w.raw += int64(n)
	return n, err
}

// Close ends the zstd frame, then the age stream (its last chunk and tag).
func (w *layerWriter) Close() error {
	err := w.zw.Close()
	if w.as != nil {
		if aerr := w.as.Close(); err == nil {
			err = aerr
		}
	}
	if w.aw != nil && err == nil {
		err = w.aw.Close()
	}
	return err
}

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
	if n > 0 {
		v.h.Write(p[:n])
		v.n += int64(n)
		if v.n > v.desc.Size {
			v.err = v.mismatch(ReasonSize, "more than "+strconv.FormatInt(v.desc.Size, 10)+" bytes", strconv.FormatInt(v.desc.Size, 10)+" bytes")
			return 0, v.err
		}
	}
	if errors.Is(err, io.EOF) {
		v.err = v.check()
		if v.err == nil {
			v.err = io.EOF
		}
		return n, v.err
	}
	if err != nil {
		v.err = &SourceError{Blob: v.blob, Err: err}
	}
	return n, v.err
}

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

// drainErr reads v to its end and returns its integrity verdict: when a
// decoder fails on altered bytes, the altered blob is the root cause to report.
func (v *verifier) drainErr() error {
	_, err := io.Copy(io.Discard, v)
	var ie *IntegrityError
	if errors.As(err, &ie) {
		return ie
	}
	return nil
}
