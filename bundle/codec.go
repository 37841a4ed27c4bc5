package bundle

import (
	"bytes"
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
//
// No content checksum: the blob's SHA-256, which the signed manifest names
// and every reader checks before it commits anything, covers the compressed
// bytes, and the age chunks are authenticated too; the frame checksum added
// nothing to that but a second pass over the plaintext, 20% of the decoding
// time of text (klauspost/compress v1.20.4 on this project's CI machine:
// 1.24 GB/s with it, 1.58 GB/s without). Readers still check the checksums
// of earlier bundles.
func encoderOptions(level zstd.EncoderLevel) []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false)}
}

// zstdLevel is the level a layer of the kind is compressed at: "fastest",
// but for the database layer, "default". The database engine writes most
// tables in COPY's binary format, which "fastest" shrinks a third less than
// text (on the bench's assisted-service data, 108 MB against 95 MB for the
// same 636 MiB), and "default" to 77 MB; the dump is bound by the server's
// COPY, which binary output sped up by more than the encoder slowed down.
func (k LayerKind) zstdLevel() zstd.EncoderLevel {
	if k == LayerDatabase {
		return zstd.SpeedDefault
	}
	return zstd.SpeedFastest
}

// encoderID names the encoder settings; a spool record made with other
// settings is not reused (its bytes would differ from what this code makes).
const encoderID = "zstd-fastest-nocrc-2MiB-frames+raw-frames;age-x25519"

// maxDecoderWindow bounds the memory a hostile stream can make the decoder use.
const maxDecoderWindow = 64 << 20

// layerWriter is zstd, then age when there are recipients, into dst. zstd
// compresses independent frames on several goroutines (frameEncoder), the
// encryption runs in its own goroutine (an AsyncWriter between the two), and
// dst's own stages (hashing, storing, uploading) add more.
type layerWriter struct {
	zw         *frameEncoder
	recipients []age.Recipient
	aw         io.WriteCloser
	as         *pipe.AsyncWriter
	asBufs     [][]byte      // the buffers of the last blob's as, for the next
	lastAge    *ageEncrypter // the last blob's closed encrypter, whose buffers the next takes
	out        io.Writer     // what zstd writes to
	raw        int64         // plaintext bytes written
	// stored is set between StoreRaw(true) and StoreRaw(false): the bytes
	// go into a frame of raw blocks.
	stored *rawFrame
}

// Sizes of the hand-off between zstd and age: whole age chunks.
const (
	encryptBufSize = 256 << 10
	encryptBufs    = 4
)

func newLayerWriter(dst io.Writer, recipients []age.Recipient, level zstd.EncoderLevel) (*layerWriter, error) {
	lw, err := newLayerEncoder(recipients, level)
	if err != nil {
		return nil, err
	}
	if err := lw.begin(dst); err != nil {
		_ = lw.zw.Close()
		return nil, err
	}
	return lw, nil
}

// newLayerEncoder is a layerWriter with no blob yet: begin gives it one, end
// completes it, and the next begin starts another with the same encoder (the
// parts of a layer, see partsWriter).
func newLayerEncoder(recipients []age.Recipient, level zstd.EncoderLevel) (*layerWriter, error) {
	zw, err := newFrameEncoder(io.Discard, encoderOptions(level)...)
	if err != nil {
		return nil, err
	}
	return &layerWriter{zw: zw, recipients: recipients}, nil
}

// begin starts a blob in dst: a new age stream (its own file key and header)
// when there are recipients, and new zstd frames.
func (w *layerWriter) begin(dst io.Writer) error {
	out := dst
	w.aw, w.as = nil, nil
	if len(w.recipients) > 0 {
		aw, err := newAgeEncrypterWith(dst, w.lastAge, w.recipients...)
		w.lastAge = nil
		if err != nil {
			return fmt.Errorf("start encryption: %w", err)
		}
		w.aw = aw
		if w.asBufs != nil {
			w.as, w.asBufs = pipe.NewAsyncWriterWith(aw, w.asBufs), nil
		} else {
			w.as = pipe.NewAsyncWriter(aw, encryptBufSize, encryptBufs)
		}
		out = w.as
	}
	w.out = out
	return w.zw.retarget(out)
}

func (w *layerWriter) Write(p []byte) (int, error) {
	var n int
	var err error
	if w.stored != nil {
		n, err = w.stored.Write(p)
	} else {
		n, err = w.zw.Write(p)
	}
	w.raw += int64(n)
	return n, err
}

// StoreRaw switches to raw blocks (files.RawHinter): already compressed
// content is stored, not run through zstd's match finder, which gains
// nothing on it and costs about as much CPU as hashing it. The current frame
// ends; the raw bytes form their own frame; the next compressed bytes start
// a new one. A layer is thus a sequence of zstd frames, which every decoder
// reads as one stream (RFC 8878, section 3.1).
func (w *layerWriter) StoreRaw(raw bool) error {
	switch {
	case raw && w.stored == nil:
		if err := w.zw.Flush(); err != nil {
			return err
		}
		w.stored = &rawFrame{out: w.out}
	case !raw && w.stored != nil:
		if err := w.stored.finish(); err != nil {
			return err
		}
		w.stored = nil
	}
	return nil
}

// end completes the current blob: the last zstd frame, then the age stream
// (its last chunk and tag). The encoder stays usable for begin.
func (w *layerWriter) end() error {
	var err error
	if w.stored != nil {
		err = w.stored.finish()
		w.stored = nil
	}
	if zerr := w.zw.Flush(); err == nil {
		err = zerr
	}
	if w.as != nil {
		if aerr := w.as.Close(); err == nil {
			err = aerr
		}
		w.asBufs = w.as.Release()
	}
	if w.aw != nil && err == nil {
		err = w.aw.Close()
		if ae, ok := w.aw.(*ageEncrypter); ok && err == nil {
			w.lastAge = ae // closed: nothing writes through it any more
		}
	}
	w.aw, w.as = nil, nil
	return err
}

// Close completes the blob and stops the encoder's goroutines.
func (w *layerWriter) Close() error {
	err := w.end()
	if zerr := w.zw.Close(); err == nil {
		err = zerr
	}
	return err
}

// rawFrame writes a zstd frame of raw blocks (RFC 8878): the frame header
// (no content size, no checksum, a 128 KiB window), then the bytes in blocks
// of up to 128 KiB, each behind its 3-byte header, written straight from the
// caller's slice; finish ends the frame with an empty last block (the format
// allows it), so no block is held back.
type rawFrame struct {
	out     io.Writer
	started bool
	hdr     [3]byte
}

const rawBlockSize = 128 << 10

// rawFrameHeader: the magic number, a frame header descriptor with no
// optional field but the window descriptor, and a window of 2^(10+7) bytes.
var rawFrameHeader = append(bytes.Clone(zstdMagic), 0x00, 7<<3)

func (f *rawFrame) Write(p []byte) (int, error) {
	if !f.started {
		if _, err := f.out.Write(rawFrameHeader); err != nil {
			return 0, err
		}
		f.started = true
	}
	n := 0
	for len(p) > 0 {
		b := p[:min(len(p), rawBlockSize)]
		if err := f.block(b, false); err != nil {
			return n, err
		}
		p, n = p[len(b):], n+len(b)
	}
	return n, nil
}

func (f *rawFrame) block(b []byte, last bool) error {
	h := uint32(len(b)) << 3 // block type 0: raw
	if last {
		h |= 1
	}
	f.hdr = [3]byte{byte(h), byte(h >> 8), byte(h >> 16)}
	if _, err := f.out.Write(f.hdr[:]); err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	_, err := f.out.Write(b)
	return err
}

// finish ends the frame; a frame that got no byte is not written.
func (f *rawFrame) finish() error {
	if !f.started {
		return nil
	}
	return f.block(nil, true)
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
	return integrityOnly(err)
}
