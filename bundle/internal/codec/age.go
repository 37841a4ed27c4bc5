package codec

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"filippo.io/age"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// The age v1 payload (https://age-encryption.org/v1): a 16-byte nonce, then
// the plaintext in 64 KiB chunks, each sealed with ChaCha20-Poly1305 under
// HKDF-SHA256(file key, nonce, "payload"); the chunk nonce is an 11-byte
// big-endian counter and a final byte that is 1 only on the last chunk.
const (
	ageChunk      = 64 << 10
	ageTag        = chacha20poly1305.Overhead
	ageSealed     = ageChunk + ageTag
	ageNonceSize  = 16
	maxAgeHeader  = 1 << 20
	ageHeaderMark = "--- "
)

var errAgeTruncated = errors.New("the encrypted stream is truncated")

// ageDecrypter decrypts an age file as it streams. The header (recipient
// stanzas and MAC) is read and checked by filippo.io/age (DecryptHeader), so
// identities, key unwrapping and header authentication are age's own code;
// the payload is opened here, without the per-chunk allocation and copy of
// age's reader (its cost showed in pull profiles), a batch of chunks at a
// time, where its source lent them (a pipe.Batcher: a pull's fetch stage hands
// over its own buffers, so the sealed bytes are never copied): the chunks
// of a batch are independent (each has its own nonce and tag), so they are
// opened by two goroutines at once.
//
// Every chunk is authenticated before its plaintext is returned; the end of
// the stream is only accepted on a chunk sealed as the last one, directly
// followed by the end of src, so truncation and appended data are errors. A
// full chunk that ends a batch whose source has not said whether more
// follows is tried as a middle chunk, then as the last one, as age's own
// reader does; once it opened as the last, only the end may follow.
type ageDecrypter struct {
	src   pipe.Batcher
	aead  cipher.AEAD
	nonce [chacha20poly1305.NonceSize]byte
	// plain are the opened chunks of the batch not yet read, in order.
	plain   [][]byte
	chunks  [][]byte
	nonces  [][chacha20poly1305.NonceSize]byte
	errs    []error
	scratch []byte // the plaintext of a batch's final chunk opened out of place
	first   bool
	ended   bool // the last chunk was opened: only the end of src may follow
	err     error
}

// ageBatch is the number of chunks read and opened at once (1 MiB of
// plaintext); ageMinSplit the batch from which a second goroutine helps.
const (
	ageBatch    = 16
	ageMinSplit = 4
)

// The decrypter's source lends the sealed payload of an age stream (what
// follows the header and the payload nonce) a batch at a time (a
// pipe.Batcher): ageBatch sealed chunks with a nil error, or what is left
// before the end of the stream with io.EOF, or before a failure with the
// source's error. A batch is valid until the next call.

// readerBatches reads the batches from an io.Reader into a buffer of its own.
type readerBatches struct {
	r   io.Reader
	buf []byte
}

func (s *readerBatches) NextBatch() ([]byte, error) {
	n, err := io.ReadFull(s.r, s.buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF { //nolint:errorlint // io.ReadFull's own values: the end of r
		// (A source error wrapping io.ErrUnexpectedEOF, a connection cut
		// in the middle of a download, is not the end: it is returned as
		// it is.)
		return s.buf[:n], io.EOF
	}
	return s.buf[:n], err
}

// newAgeDecrypter reads the age header from src and unwraps the file key
// with identities. Its errors are age's (*age.NoIdentityMatchError for
// identities that are not recipients) or a malformed-header error. The
// payload is read into a batch buffer of its own (see newAgeDecrypterOn for
// a source that lends its batches).
func newAgeDecrypter(src io.Reader, identities []age.Identity) (*ageDecrypter, error) {
	aead, rest, err := readAgePayloadKey(src, identities)
	if err != nil {
		return nil, err
	}
	var r io.Reader = src
	if len(rest) > 0 {
		r = io.MultiReader(bytes.NewReader(rest), src)
	}
	return newAgeDecrypterOn(&readerBatches{r: r, buf: make([]byte, ageBatch*ageSealed)}, aead), nil
}

// newAgeDecrypterOn decrypts the payload src lends, with the payload key of
// readAgePayloadKey.
func newAgeDecrypterOn(src pipe.Batcher, aead cipher.AEAD) *ageDecrypter {
	return &ageDecrypter{src: src, aead: aead, first: true,
		chunks: make([][]byte, 0, ageBatch), nonces: make([][chacha20poly1305.NonceSize]byte, ageBatch), errs: make([]error, ageBatch)}
}

// readAgePayloadKey reads an age header and the payload nonce from src, has
// age unwrap the file key with identities and check the header's MAC, and
// returns the payload's AEAD; rest is what it read of src beyond the nonce
// (the payload's first bytes: the header is read through a small buffer).
func readAgePayloadKey(src io.Reader, identities []age.Identity) (aead cipher.AEAD, rest []byte, err error) {
	br := bufio.NewReaderSize(src, 4096)
	hdr, err := readAgeHeader(br)
	if err != nil {
		return nil, nil, err
	}
	fileKey, err := age.DecryptHeader(hdr, identities...)
	if err != nil {
		return nil, nil, err
	}
	nonce := make([]byte, ageNonceSize)
	if _, err := io.ReadFull(br, nonce); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, errAgeTruncated
		}
		return nil, nil, err
	}
	key, err := hkdf.Key(sha256.New, fileKey, nonce, "payload", chacha20poly1305.KeySize)
	clear(fileKey)
	if err != nil {
		return nil, nil, err
	}
	if aead, err = chacha20poly1305.New(key); err != nil {
		return nil, nil, err
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		rest = bytes.Clone(b)
	}
	return aead, rest, nil
}

// readAgeHeader returns the header's bytes: every line up to and including
// the "--- MAC" line. Stanza bodies are base64, so no other line starts with
// "---".
func readAgeHeader(br *bufio.Reader) ([]byte, error) {
	var hdr []byte
	lineStart := 0
	for {
		part, err := br.ReadSlice('\n')
		hdr = append(hdr, part...)
		if len(hdr) > maxAgeHeader {
			return nil, fmt.Errorf("failed to read header: over %d bytes", maxAgeHeader)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // a long line: keep reading it
		case errors.Is(err, io.EOF):
			return nil, errors.New("failed to read header: unexpected end of the encrypted stream")
		case err != nil:
			return nil, err
		}
		if bytes.HasPrefix(hdr[lineStart:], []byte(ageHeaderMark)) {
			return hdr, nil
		}
		lineStart = len(hdr)
	}
}

func (d *ageDecrypter) Read(p []byte) (int, error) {
	for len(d.plain) > 0 && len(d.plain[0]) == 0 {
		d.plain = d.plain[1:]
	}
	for len(d.plain) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		var n int
		n, d.err = d.next(p)
		if n > 0 {
			return n, d.err // opened straight into p (next fails with n == 0)
		}
	}
	n := 0
	for n < len(p) && len(d.plain) > 0 {
		m := copy(p[n:], d.plain[0])
		d.plain[0] = d.plain[0][m:]
		n += m
		if len(d.plain[0]) == 0 {
			d.plain = d.plain[1:]
		}
	}
	if len(d.plain) == 0 && d.err != nil {
		return n, d.err
	}
	return n, nil
}

var (
	errAgeAltered  = errors.New("failed to authenticate a payload chunk: the stream was altered")
	errAgeLastLost = errors.New("failed to authenticate the last chunk: the stream was truncated or altered")
)

// next takes a batch from src, authenticates and decrypts it: into dst when
// it holds the batch's plaintext (it returns the plaintext's length), else
// in place (or, for a batch's final chunk, into scratch), into d.plain.
// After the last chunk it returns io.EOF; a failure returns 0 and nothing
// of the batch.
func (d *ageDecrypter) next(dst []byte) (int, error) {
	b, err := d.src.NextBatch()
	end := false
	switch {
	case err == nil:
	case err == io.EOF: //nolint:errorlint // the Batcher's own value: the end of the stream
		end = true
	default:
		return 0, err
	}
	if d.ended {
		if len(b) > 0 || !end {
			return 0, errors.New("data after the last chunk of the encrypted stream: it was altered")
		}
		return 0, io.EOF
	}
	// Split the batch into sealed chunks; only the very last may be short.
	d.chunks = d.chunks[:0]
	for off := 0; off < len(b); off += ageSealed {
		d.chunks = append(d.chunks, b[off:min(off+ageSealed, len(b))])
	}
	k := len(d.chunks)
	switch {
	case end && (k == 0 || len(d.chunks[k-1]) < ageTag):
		return 0, errAgeTruncated
	case end && len(d.chunks[k-1]) == ageTag && !(d.first && k == 1):
		return 0, errors.New("the encrypted stream ends with an empty chunk")
	case !end && (k == 0 || len(d.chunks[k-1]) != ageSealed):
		return 0, fmt.Errorf("the encrypted stream's source lent %d bytes, not whole chunks", len(b))
	}
	for i := range d.chunks {
		d.nonces[i] = d.nonce
		incAgeNonce(&d.nonce)
	}
	if end {
		d.nonces[k-1][chacha20poly1305.NonceSize-1] = 1
	}
	plainLen := len(b) - k*ageTag
	direct := len(dst) >= plainLen
	// The final chunk of a batch that may not be the last one is opened
	// out of place (into dst, or scratch), so that a failure as a middle
	// chunk leaves its ciphertext to try it as the last.
	outOfPlace := !end && !direct
	if outOfPlace && d.scratch == nil {
		d.scratch = make([]byte, ageChunk)
	}
	open := func(from, to int) {
		for i := from; i < to; i++ {
			c := d.chunks[i]
			switch {
			case direct:
				off := i * ageChunk
				_, d.errs[i] = d.aead.Open(dst[off:off], d.nonces[i][:], c, nil)
			case outOfPlace && i == k-1:
				_, d.errs[i] = d.aead.Open(d.scratch[:0], d.nonces[i][:], c, nil)
			default:
				_, d.errs[i] = d.aead.Open(c[:0], d.nonces[i][:], c, nil)
			}
		}
	}
	inHalves(k, open)
	if !end && d.errs[k-1] != nil {
		// Sealed as the last chunk, with the end of the stream not yet
		// seen: it must follow (see above).
		d.nonces[k-1][chacha20poly1305.NonceSize-1] = 1
		if open(k-1, k); d.errs[k-1] == nil {
			d.ended = true
		}
	}
	d.plain = d.plain[:0]
	for i := 0; i < k; i++ {
		if d.errs[i] != nil {
			d.plain = d.plain[:0]
			if end && i == k-1 {
				return 0, errAgeLastLost
			}
			return 0, errAgeAltered
		}
		switch {
		case direct:
		case outOfPlace && i == k-1:
			d.plain = append(d.plain, d.scratch[:len(d.chunks[i])-ageTag])
		default:
			d.plain = append(d.plain, d.chunks[i][:len(d.chunks[i])-ageTag])
		}
	}
	d.first = false
	out := 0
	if direct {
		out = plainLen
	}
	if end {
		return out, io.EOF
	}
	return out, nil
}

// inHalves runs f over chunks [0, k): the second half in another goroutine
// when the batch is large enough to be worth it.
func inHalves(k int, f func(from, to int)) {
	if k < ageMinSplit {
		f(0, k)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { f(k/2, k) })
	f(0, k/2)
	wg.Wait()
}

func incAgeNonce(nonce *[chacha20poly1305.NonceSize]byte) {
	for i := len(nonce) - 2; i >= 0; i-- {
		nonce[i]++
		if nonce[i] != 0 {
			return
		}
	}
	panic("age stream: chunk counter wrapped around")
}

// ageEncrypter writes an age file whose header is age's own: age.Encrypt
// writes the header and the payload nonce, through recipients that note the
// file key they are asked to wrap (keyCapture). The payload is sealed here,
// a batch of chunks at a time by two goroutines, as the v1 format defines it
// (see ageDecrypter); age's own writer, which seals one chunk at a time,
// is never used for the payload.
//
// Chunks are sealed from where the caller's bytes lie, out of place: only
// what might be the stream's last chunk (the end of each Write, at most one
// chunk) is copied and held until more bytes or Close say whether it is.
// When dst is a Filler (a pipe.AsyncWriter), the sealed batch is written
// straight into its buffer; else into sealed, then to dst.
type ageEncrypter struct {
	dst    io.Writer
	fill   Filler // dst's in-place writes, or nil
	aead   cipher.AEAD
	nonce  [chacha20poly1305.NonceSize]byte
	plain  []byte   // held plaintext, up to one chunk, not yet sealed
	batch  [][]byte // the chunks of the batch being sealed
	sealed []byte   // the sealed batch, when dst is not a Filler (made when first needed)
	nonces [][chacha20poly1305.NonceSize]byte
	err    error
}

// Filler is a writer that lets a producer write into its buffer in place
// (pipe.AsyncWriter.Fill): fill writes exactly n bytes, n at most
// FillMax.
type Filler interface {
	Fill(n int, fill func(b []byte)) error
	FillMax() int
}

// SealedBatch is the size of a full batch of sealed chunks: a Filler whose
// FillMax is at least this takes every batch in place.
const SealedBatch = ageBatch * ageSealed

// keyCapture wraps a recipient to note the file key age generated.
type keyCapture struct {
	age.Recipient
	key *[]byte
}

func (c keyCapture) Wrap(fileKey []byte) ([]*age.Stanza, error) {
	*c.key = bytes.Clone(fileKey)
	return c.Recipient.Wrap(fileKey)
}

// keyCaptureLabels keeps the labels of a recipient that has them (age
// refuses to mix recipients with different labels, such as post-quantum
// ones with classic ones).
type keyCaptureLabels struct{ keyCapture }

func (c keyCaptureLabels) WrapWithLabels(fileKey []byte) ([]*age.Stanza, []string, error) {
	*c.key = bytes.Clone(fileKey)
	return c.Recipient.(age.RecipientWithLabels).WrapWithLabels(fileKey)
}

func newAgeEncrypter(dst io.Writer, recipients ...age.Recipient) (*ageEncrypter, error) {
	return newAgeEncrypterWith(dst, nil, recipients...)
}

// newAgeEncrypterWith is newAgeEncrypter with the buffers of prev, a closed
// encrypter (nil: new ones), for the parts of a layer written in turn.
func newAgeEncrypterWith(dst io.Writer, prev *ageEncrypter, recipients ...age.Recipient) (*ageEncrypter, error) {
	var fileKey []byte
	wrapped := make([]age.Recipient, len(recipients))
	for i, r := range recipients {
		c := keyCapture{Recipient: r, key: &fileKey}
		if _, ok := r.(age.RecipientWithLabels); ok {
			wrapped[i] = keyCaptureLabels{c}
		} else {
			wrapped[i] = c
		}
	}
	var hdr bytes.Buffer
	// The returned writer is dropped unused: it holds nothing but the
	// payload key, and what it would write (the payload) is written here.
	if _, err := age.Encrypt(&hdr, wrapped...); err != nil {
		return nil, err
	}
	if len(fileKey) == 0 || hdr.Len() < ageNonceSize {
		return nil, errors.New("age did not wrap a file key")
	}
	nonce := hdr.Bytes()[hdr.Len()-ageNonceSize:]
	key, err := hkdf.Key(sha256.New, fileKey, nonce, "payload", chacha20poly1305.KeySize)
	clear(fileKey)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	if _, err := dst.Write(hdr.Bytes()); err != nil {
		return nil, err
	}
	if prev == nil {
		prev = &ageEncrypter{plain: make([]byte, 0, ageChunk), batch: make([][]byte, 0, ageBatch),
			nonces: make([][chacha20poly1305.NonceSize]byte, ageBatch)}
	}
	e := &ageEncrypter{dst: dst, aead: aead, plain: prev.plain[:0], batch: prev.batch[:0], sealed: prev.sealed, nonces: prev.nonces}
	if f, ok := dst.(Filler); ok && f.FillMax() >= SealedBatch {
		e.fill = f
	}
	return e, nil
}

func (e *ageEncrypter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n := len(p)
	// Complete a partial chunk held from the last Write.
	if len(e.plain) > 0 && len(e.plain) < ageChunk {
		m := copy(e.plain[len(e.plain):ageChunk], p)
		e.plain, p = e.plain[:len(e.plain)+m], p[m:]
	}
	if len(p) == 0 {
		return n, nil
	}
	// More bytes follow the held chunk, if any, and every whole chunk of p
	// but its end: none of them is the last.
	batch := e.batch[:0]
	if len(e.plain) == ageChunk {
		batch = append(batch, e.plain)
	}
	for len(p) > ageChunk {
		batch = append(batch, p[:ageChunk])
		p = p[ageChunk:]
		if len(batch) == ageBatch {
			if e.err = e.seal(batch, false); e.err != nil {
				return 0, e.err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if e.err = e.seal(batch, false); e.err != nil {
			return 0, e.err
		}
	}
	// The end of p (1 to ageChunk bytes) may end the stream: held.
	e.plain = append(e.plain[:0], p...)
	return n, nil
}

// Close seals what is left, its last chunk marked as the last (an empty
// stream is one empty last chunk).
func (e *ageEncrypter) Close() error {
	if e.err != nil {
		return e.err
	}
	e.err = e.seal([][]byte{e.plain}, true)
	e.plain = e.plain[:0]
	if e.err == nil {
		e.err = errors.New("the encrypted stream is closed")
		return nil
	}
	return e.err
}

// seal seals the chunks of batch (each whole but the last chunk of the
// stream, which last marks) and writes them to dst.
func (e *ageEncrypter) seal(batch [][]byte, last bool) error {
	k := len(batch)
	size := 0
	for i, c := range batch {
		e.nonces[i] = e.nonce
		incAgeNonce(&e.nonce)
		size += len(c) + ageTag
	}
	if last {
		e.nonces[k-1][chacha20poly1305.NonceSize-1] = 1
	}
	into := func(out []byte) {
		inHalves(k, func(from, to int) {
			for i := from; i < to; i++ {
				e.aead.Seal(out[i*ageSealed:i*ageSealed], e.nonces[i][:], batch[i], nil)
			}
		})
	}
	if e.fill != nil {
		return e.fill.Fill(size, into)
	}
	if e.sealed == nil {
		e.sealed = make([]byte, SealedBatch)
	}
	into(e.sealed[:size])
	_, err := e.dst.Write(e.sealed[:size])
	return err
}
