package bundle

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	"golang.org/x/crypto/chacha20poly1305"
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
// the payload is opened here chunk by chunk, in place, without the per-chunk
// allocation and copy of age's reader (its cost showed in pull profiles).
//
// Every chunk is authenticated before its plaintext is returned; the end of
// the stream is only accepted on a chunk sealed as the last one, directly
// followed by the end of src, so truncation and appended data are errors.
type ageDecrypter struct {
	src    io.Reader
	aead   cipher.AEAD
	nonce  [chacha20poly1305.NonceSize]byte
	buf    []byte // ageSealed+1: one sealed chunk and one byte of look-ahead
	carry  bool   // buf[0] holds the look-ahead byte of the previous read
	unread []byte
	first  bool
	err    error
}

// newAgeDecrypter reads the age header from src and unwraps the file key
// with identities. Its errors are age's (*age.NoIdentityMatchError for
// identities that are not recipients) or a malformed-header error.
func newAgeDecrypter(src io.Reader, identities []age.Identity) (*ageDecrypter, error) {
	br := bufio.NewReaderSize(src, 4096)
	hdr, err := readAgeHeader(br)
	if err != nil {
		return nil, err
	}
	fileKey, err := age.DecryptHeader(hdr, identities...)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, ageNonceSize)
	if _, err := io.ReadFull(br, nonce); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errAgeTruncated
		}
		return nil, err
	}
	key, err := hkdf.Key(sha256.New, fileKey, nonce, "payload", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	// What the header reader buffered beyond the nonce is payload.
	var rest io.Reader = src
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		rest = io.MultiReader(bytes.NewReader(bytes.Clone(b)), src)
	}
	return &ageDecrypter{src: rest, aead: aead, buf: make([]byte, ageSealed+1), first: true}, nil
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
	if len(d.unread) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		if d.err = d.next(); d.err != nil && len(d.unread) == 0 {
			return 0, d.err
		}
	}
	n := copy(p, d.unread)
	d.unread = d.unread[n:]
	if len(d.unread) == 0 && d.err != nil {
		return n, d.err
	}
	return n, nil
}

// next reads, authenticates and decrypts one chunk into d.unread. After the
// last chunk it sets d.err to io.EOF (with the chunk's plaintext unread).
func (d *ageDecrypter) next() error {
	start := 0
	if d.carry {
		// The look-ahead byte of the previous read starts this chunk.
		d.buf[0] = d.buf[ageSealed]
		start = 1
	}
	n, err := io.ReadFull(d.src, d.buf[start:])
	n += start
	last := false
	switch {
	case err == nil: // a full chunk and one more byte: not the last chunk
	case err == io.EOF || err == io.ErrUnexpectedEOF: //nolint:errorlint // io.ReadFull's own values: the end of src
		// (A source error wrapping io.ErrUnexpectedEOF, a connection cut in
		// the middle of a download, is not the end: it is returned below.)
		last = true
	default:
		return err
	}
	if last {
		switch {
		case n < ageTag:
			return errAgeTruncated
		case n == ageTag && !d.first:
			return errors.New("the encrypted stream ends with an empty chunk")
		}
	}
	sealed := d.buf[:min(n, ageSealed)]
	if last {
		d.nonce[len(d.nonce)-1] = 1
	}
	plain, oerr := d.aead.Open(sealed[:0], d.nonce[:], sealed, nil)
	if oerr != nil {
		if last {
			return errors.New("failed to authenticate the last chunk: the stream was truncated or altered")
		}
		return errors.New("failed to authenticate a payload chunk: the stream was altered")
	}
	incAgeNonce(&d.nonce)
	d.first = false
	d.unread = plain
	if last {
		return io.EOF
	}
	// buf[ageSealed], the look-ahead byte, is outside the plaintext
	// (buf[:ageChunk]); next moves it to the front once that is consumed.
	d.carry = true
	return nil
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
