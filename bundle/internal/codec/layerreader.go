package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// prefetchSize is the buffer size of the read-ahead stage of the plaintext
// (the stage of the ciphertext holds whole batches of sealed chunks).
const prefetchSize = 1 << 20

// Blob is one stored blob of a layer, as its reader takes it.
type Blob struct {
	// R yields the stored bytes, unchecked; its errors are the caller's own.
	R io.Reader
	// Tap checks them (size, digest): it is given each piece R yields, in
	// order, with R's error (nil while R goes on), and returns what R's
	// reader gets in its place: the check's error, or io.EOF at an end that
	// verified; once it gave a verdict it keeps returning it. An encrypted
	// blob's bytes are checked in a goroutine of their own, beside the reads
	// from R: hashing costs about twice what reading a socket does, and in
	// one goroutine the two made the stage every other one waited for.
	Tap pipe.Tap
	// Close ends the fetch; it must unblock a Read of R in progress
	// (closing the HTTP body or the file does).
	Close func() error
	// Cause returns err when it says the stored bytes are not those that
	// were written (R's size or digest check failed), else nil. When
	// decrypting or decompressing fails, the reader reads R to its end: an
	// error Cause keeps is the root cause, and is reported instead.
	Cause func(err error) error
	// Typed reports whether err is one of the caller's typed failures
	// (R's own, or the format's), which the reader returns as it is rather
	// than as a failure of the ciphertext or of the zstd stream.
	Typed func(err error) bool
}

// TamperedError is ciphertext that fails age's authentication although it
// may be the blob the manifest names: the bytes were altered after they
// were encrypted (a payload chunk that does not authenticate, a truncated or
// extended stream, a header that does not parse or whose MAC fails).
type TamperedError struct{ Err error }

func (e *TamperedError) Error() string { return e.Err.Error() }
func (e *TamperedError) Unwrap() error { return e.Err }

// FormatError is a layer's stream that is not what the format says: zstd
// that does not decode, or data after the end of the zstd stream.
type FormatError struct{ Err error }

func (e *FormatError) Error() string { return e.Err.Error() }
func (e *FormatError) Unwrap() error { return e.Err }

// Reuse is what the reader of one blob leaves to the next, when the blobs
// of a layer (its parts) are read in turn: its frame decoder (and workers)
// and the buffers of its two read-ahead stages.
type Reuse struct {
	fd      *frameDecoder
	bufs    [][]byte
	rawBufs [][]byte
}

// Close stops the frame decoder of a Reuse that no reader took.
func (r *Reuse) Close() {
	if r != nil && r.fd != nil {
		r.fd.Close()
		r.fd = nil
	}
}

// LayerReader is the read side of a layer's blob: its stored bytes,
// decrypted when identities are given, decompressed, as a pipeline of
// goroutines (see docs/bundle-format.md for the stages):
//
//	fetch (Blob.R)
//	  -> [read-ahead of the ciphertext, whole batches of sealed chunks;
//	      Blob.Tap hashes each batch in a goroutine of its own]
//	  -> age payload, opened where the read-ahead holds it
//	  -> read-ahead of the plaintext (pipe.Prefetcher, a pipe.Lender)
//	  -> frame decoder (several frames at a time; raw blocks lent as they lie)
//	  -> Next/Read, in the caller's goroutine
//
// Its final Read returns io.EOF only when the blob verified (R ended
// without error), the age stream authenticated to its last chunk and the
// zstd stream ended cleanly with nothing after it; otherwise it returns the
// root cause: the caller's error of R (altered storage first), a
// *TamperedError, or a *FormatError.
type LayerReader struct {
	closeRaw func() error     // closes the fetched blob (and the ciphertext's read-ahead)
	raw      *pipe.Prefetcher // the fetch-and-hash stage of an encrypted blob, or nil
	ar       *ageDecrypter    // read by pf's goroutine; nil unencrypted
	pf       *pipe.Prefetcher // the plaintext's read-ahead
	fd       *frameDecoder    // the only reader of pf until it is stopped
	typed    func(error) bool // Blob.Typed
	// blobCause is Blob.Cause: the read-ahead of the plaintext ends with
	// the root cause its onErr found, which classify reports first.
	blobCause func(error) error
	err       error
}

// NewLayerReader starts reading b: decrypted with identities (nil: the blob
// is not encrypted), decompressed. reuse, when not nil, is what the reader
// of the previous blob of the layer left (Detach); it is taken whatever
// the outcome. On failure b is closed. A failure of the age header is b's
// root cause (Blob.Cause), else age's *age.NoIdentityMatchError (none of
// the identities is a recipient) or a *TamperedError.
func NewLayerReader(b Blob, identities []age.Identity, reuse *Reuse) (*LayerReader, error) {
	if reuse == nil {
		reuse = &Reuse{}
	}
	opened := false
	defer func() {
		if !opened {
			reuse.Close() // its workers end with it
		}
	}()
	// checked yields R's bytes checked, in its reader's goroutine.
	checked := &tapReader{r: b.R, tap: b.Tap}
	drain := func() error {
		_, err := io.Copy(io.Discard, checked)
		return b.Cause(err)
	}
	// stored is the verified blob; storedErr, called by stored's one reader,
	// reads it to its end and returns its root cause: when a decoder fails
	// on altered bytes, the altered blob is the cause to report.
	storedErr := drain
	closeRaw := b.Close
	var raw *pipe.Prefetcher
	var plain io.Reader = checked
	var ar *ageDecrypter
	if identities != nil {
		// The header is read here, so that the fetch stage's buffers hold
		// whole batches of sealed chunks, which the decrypter opens where
		// they lie. Fetching and hashing get a stage of their own, ahead of
		// decryption: hashing and decryption each cost about what zstd and
		// the file writes do, so in one stage they made the pull wait on it.
		aead, rest, err := readAgePayloadKey(checked, identities)
		if err != nil {
			cause := drain()
			b.Close()
			if cause != nil {
				return nil, cause
			}
			var nim *age.NoIdentityMatchError
			if errors.As(err, &nim) {
				return nil, err
			}
			return nil, &TamperedError{Err: err}
		}
		// rest was checked with the header; what follows is checked by the
		// prefetcher's tap, beside the reads.
		payload := io.MultiReader(bytes.NewReader(rest), b.R)
		raw = pipe.NewTappedPrefetcher(payload, checked.after(len(rest)), nil, reuse.rawBufs, ageBatch*ageSealed)
		storedErr = func() error { return b.Cause(raw.DrainErr()) }
		closeRaw = func() error { return raw.Close(b.Close) }
		ar = newAgeDecrypterOn(raw, aead)
		plain = &tamperedReader{r: ar, typed: b.Typed}
	}
	// The decrypted (or, unencrypted, the verified) bytes are read ahead
	// in the prefetcher's goroutine, ahead of zstd and the consumer in the
	// caller's. A failure there is traced to its root cause in that
	// goroutine (stored is only read by it): the blob is drained, and an
	// altered blob is reported as such rather than as a decryption error.
	pf := pipe.NewPrefetcher(plain, func(err error) error {
		if cause := storedErr(); cause != nil {
			return cause
		}
		return err
	}, reuse.bufs, prefetchSize)
	// The frames are decoded several at a time (frameDecoder); zstd's own
	// stream concurrency, which splits one frame's work in stages, cost
	// more in hand-offs than it gained (measured).
	fd := reuse.fd
	reuse.fd = nil
	if fd == nil {
		var err error
		if fd, err = newFrameDecoder(); err != nil {
			pf.Close(closeRaw)
			return nil, err
		}
	}
	fd.Reset(pf)
	opened = true
	return &LayerReader{closeRaw: closeRaw, raw: raw, ar: ar, pf: pf, fd: fd, typed: b.Typed, blobCause: b.Cause}, nil
}

// tapReader is a Blob's R checked by its Tap, in the reader's goroutine.
type tapReader struct {
	r   io.Reader
	tap pipe.Tap
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if terr := t.tap(p[:n], err); terr != nil || err == nil {
		err = terr
	}
	return n, err
}

// after is the tap of a stream that starts with the last skip bytes t
// already read (and checked), then goes on with the rest of t's R.
func (t *tapReader) after(skip int) pipe.Tap {
	return func(b []byte, err error) error {
		k := min(skip, len(b))
		skip -= k
		return t.tap(b[k:], err)
	}
}

// tamperedReader marks errors of the age payload as tampering: the file
// key was unwrapped, so a chunk that fails authentication, a truncated or
// extended stream, was altered after encryption. The source's own errors
// and cancellations stay as they are.
type tamperedReader struct {
	r     io.Reader
	typed func(error) bool
}

func (d *tamperedReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		if !d.typed(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			err = &TamperedError{Err: err}
		}
	}
	return n, err
}

func (l *LayerReader) Read(p []byte) (int, error) {
	b, err := l.Next(len(p))
	return copy(p, b), err
}

// Next returns up to max bytes of the plaintext without a copy (see
// files.Lender): valid until the next call of Next or Read, or Close. Its
// errors are Read's.
func (l *LayerReader) Next(max int) ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	b, err := l.fd.next(max)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, io.EOF):
		l.err = l.finish()
	default:
		l.err = l.classify(err)
	}
	return b, l.err
}

// finish runs at the end of the zstd stream: nothing may follow it, and the
// blob must verify (the prefetcher ends with io.EOF only when it did).
func (l *LayerReader) finish() error {
	l.fd.Stop()
	var one [1]byte
	n, err := io.ReadFull(l.pf, one[:])
	if n > 0 {
		return &FormatError{Err: errors.New("data after the end of the zstd stream")}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return l.classify(err)
	}
	return io.EOF
}

// classify turns a decode error into the root cause: altered storage first,
// then decryption, then the stream format.
func (l *LayerReader) classify(err error) error {
	l.fd.Stop()
	var te *TamperedError
	var fe *FormatError
	if first := l.pf.DrainErr(); first != nil {
		if cause := l.blobCause(first); cause != nil {
			return cause
		}
		if errors.As(first, &te) {
			return te
		}
	}
	if l.typed(err) || errors.As(err, &te) || errors.As(err, &fe) {
		return err
	}
	return &FormatError{Err: fmt.Errorf("zstd: %w", err)}
}

// DrainStored reads the rest of the stored blob without decompressing it and
// returns its error, if any (see files.StoredDrainer).
func (l *LayerReader) DrainStored() error {
	l.fd.Stop()
	if err := l.pf.DrainErr(); err != nil {
		var te *TamperedError
		if l.typed(err) || errors.As(err, &te) {
			return err
		}
		return &FormatError{Err: err}
	}
	return nil
}

// Close stops the pipeline and closes the blob.
func (l *LayerReader) Close() error {
	// pf first: closing it ends a read of the splitter's in progress.
	err := l.pf.Close(l.closeRaw)
	l.fd.Close()
	return err
}

// Detach closes a layer reader that reached its end but keeps its decoder
// and buffers for the next blob's (NewLayerReader).
func (l *LayerReader) Detach() *Reuse {
	l.fd.Stop() // at the end: it has already exited
	_ = l.pf.Close(l.closeRaw)
	r := &Reuse{fd: l.fd, bufs: l.pf.Release()}
	if l.raw != nil {
		r.rawBufs = l.raw.Release()
	}
	return r
}
