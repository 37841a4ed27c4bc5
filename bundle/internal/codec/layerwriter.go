package codec

import (
	"fmt"
	"io"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// LayerWriter encodes a layer's plaintext into its blob: zstd, then age when
// there are recipients, into dst. zstd compresses independent frames on
// several goroutines (frameEncoder), the encryption runs in its own
// goroutine (an AsyncWriter between the two), and dst's own stages (hashing,
// storing, uploading) add more.
type LayerWriter struct {
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

// Sizes of the hand-off between zstd and age: a batch of whole age chunks,
// so that the encrypter seals all but one chunk of each buffer where it
// lies (ageEncrypter.Write).
const (
	encryptBufSize = ageBatch * ageChunk
	encryptBufs    = 4
)

// NewLayerWriter starts a blob in dst, compressed at level and encrypted
// to recipients (none: plaintext); Close completes it.
func NewLayerWriter(dst io.Writer, recipients []age.Recipient, level zstd.EncoderLevel) (*LayerWriter, error) {
	lw, err := NewLayerEncoder(recipients, level)
	if err != nil {
		return nil, err
	}
	if err := lw.Begin(dst); err != nil {
		_ = lw.zw.Close()
		return nil, err
	}
	return lw, nil
}

// NewLayerEncoder is a LayerWriter with no blob yet: Begin gives it one, End
// completes it, and the next Begin starts another with the same encoder (the
// parts of a layer); Stop ends its goroutines.
func NewLayerEncoder(recipients []age.Recipient, level zstd.EncoderLevel) (*LayerWriter, error) {
	zw, err := newFrameEncoder(io.Discard, encoderOptions(level)...)
	if err != nil {
		return nil, err
	}
	return &LayerWriter{zw: zw, recipients: recipients}, nil
}

// Begin starts a blob in dst: a new age stream (its own file key and
// header) when there are recipients, and new zstd frames.
func (w *LayerWriter) Begin(dst io.Writer) error {
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

func (w *LayerWriter) Write(p []byte) (int, error) {
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
func (w *LayerWriter) StoreRaw(raw bool) error {
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

// End completes the current blob: the last zstd frame, then the age stream
// (its last chunk and tag). The encoder stays usable for Begin.
func (w *LayerWriter) End() error {
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
func (w *LayerWriter) Close() error {
	err := w.End()
	if zerr := w.zw.Close(); err == nil {
		err = zerr
	}
	return err
}

// Stop stops the encoder's goroutines without completing a blob (after End,
// or to drop the one in progress); the writer is not usable afterwards.
func (w *LayerWriter) Stop() error { return w.zw.Close() }

// Plain is the number of plaintext bytes written.
func (w *LayerWriter) Plain() int64 { return w.raw }
