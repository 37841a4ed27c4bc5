package bundle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"filippo.io/age"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// The files layer in parts (format 1.2). A registry takes one blob as one
// ordered stream: distribution hashes it on one core as it arrives, so a
// single blob of a GiB uploads at that core's pace however many the registry
// has. The files layer is therefore cut into parts of a fixed amount of
// plaintext, each a blob of its own (a zstd stream in an age stream, like a
// whole layer), and the parts are uploaded side by side. The tar is the
// concatenation of the parts' plaintexts in manifest order. A layer that fits
// in one part is written exactly as format 1.1 wrote it.
const (
	// DefaultPartSize is the plaintext of one part of the files layer.
	DefaultPartSize int64 = 128 << 20
	// MinPartSize is the smallest part size Create accepts.
	MinPartSize int64 = 1 << 20
	// maxFilesParts caps the parts of a layer (writer and reader): the
	// manifest stays small and a part's number has four digits.
	maxFilesParts = 9999
	// partUploads is how many parts are uploaded at a time.
	partUploads = 4
)

// partState is one part: its plaintext size and, once it is whole, its
// descriptor; in file mode, its file and the result of its upload.
type partState struct {
	file  string
	plain int64
	desc  ocispec.Descriptor
	sent  int64
	err   error
}

// openPart is the part being produced.
type openPart struct {
	st *partState
	n  int64 // plaintext in it so far
	// stream mode
	bw oci.BlobWriter
	// file mode
	f  *os.File
	hw *oci.HashWriter
	aw *pipe.AsyncWriter
}

// partsWriter writes a layer as parts of size plaintext bytes. It is the
// destination of files.Write (a files.RawHinter). One encoder serves every
// part in turn (parts are produced in order); a part ends after exactly size
// bytes of plaintext, so where the parts end, like where the zstd frames end,
// depends only on the byte count.
//
// In stream mode (file == nil) each part is a blob of w, written as it is
// produced and committed before the next begins. In file mode each part is
// written to the file file(i) names, hashed on the way, and once whole it is
// queued for upload: up to partUploads parts are uploaded at a time while
// the next ones are produced. keep leaves the files for the spool (resume);
// otherwise each is removed once uploaded.
type partsWriter struct {
	ctx        context.Context
	cancel     context.CancelFunc
	w          oci.Writer
	rw         oci.Resumer
	mediaType  string
	size       int64
	lw         *codec.LayerWriter
	file       func(i int) string
	keep       bool
	onUpload   func(int64)
	parts      []*partState
	cur        *openPart
	stored     bool
	raw        int64
	fileBufs   [][]byte // the last file part's buffers, for the next
	queue      chan *partState
	wg         sync.WaitGroup
	mu         sync.Mutex // guards uploadErr and the parts' sent and err
	uploadErr  error      // the first failed upload (file mode)
	streamErr  error      // a failed commit (stream mode)
	closed     bool
	encoderEnd bool
}

func newPartsWriter(ctx context.Context, w oci.Writer, mediaType string, recipients []age.Recipient, size int64, file func(int) string, keep bool, onUpload func(int64)) (*partsWriter, error) {
	if size < MinPartSize {
		return nil, fmt.Errorf("part size %d is below the minimum of %d bytes", size, MinPartSize)
	}
	pw := &partsWriter{w: w, mediaType: mediaType, size: size, file: file, keep: keep, onUpload: onUpload}
	if file != nil {
		rw, ok := w.(oci.Resumer)
		if !ok {
			return nil, errors.New("parts in files need a registry target")
		}
		pw.rw = rw
	}
	pw.ctx, pw.cancel = context.WithCancel(ctx)
	lw, err := codec.NewLayerEncoder(recipients, LayerFiles.zstdLevel())
	if err != nil {
		pw.cancel()
		return nil, err
	}
	pw.lw = lw
	return pw, nil
}

func (w *partsWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if w.cur == nil {
			if err := w.open(); err != nil {
				return n, err
			}
		}
		k := int(min(int64(len(p)), w.size-w.cur.n))
		m, err := w.lw.Write(p[:k])
		n, w.cur.n, w.raw = n+m, w.cur.n+int64(m), w.raw+int64(m)
		if err != nil {
			return n, w.writeErr(err)
		}
		p = p[m:]
		if w.cur.n == w.size {
			if err := w.endPart(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// StoreRaw is files.RawHinter: the mode carries over into the next part.
func (w *partsWriter) StoreRaw(raw bool) error {
	w.stored = raw
	if w.cur == nil {
		return nil
	}
	return w.lw.StoreRaw(raw)
}

// writeErr names the spool file when writing it failed.
func (w *partsWriter) writeErr(err error) error {
	if w.cur != nil && w.cur.f != nil && w.cur.aw.Err() != nil {
		return fmt.Errorf("spool %s: %w (give --spool-dir on a filesystem with room for the layer, or --no-spool)", w.cur.st.file, err)
	}
	return err
}

func (w *partsWriter) open() error {
	i := len(w.parts)
	if i == maxFilesParts {
		return fmt.Errorf("the layer needs more than %d parts of %d bytes: give a larger part size", maxFilesParts, w.size)
	}
	if err := w.failed(); err != nil && !w.keep {
		return err // not kept for a rerun: stop producing what cannot be sent
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	op := &openPart{st: &partState{}}
	var dst io.Writer
	if w.file != nil {
		op.st.file = w.file(i)
		f, err := os.OpenFile(op.st.file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		// Room for the part's ciphertext when it does not compress (the
		// log archives); endPart gives back what a smaller one did not use.
		if err := pipe.Preallocate(f, partCiphertextMax(w.size)); err != nil {
			f.Close()
			_ = os.Remove(op.st.file)
			return fmt.Errorf("spool: %w (give --spool-dir on a filesystem with room for the layer, or --no-spool)", err)
		}
		op.f, op.hw = f, oci.NewHashWriter(&pipe.FileWriter{F: f}, nil)
		if w.fileBufs != nil {
			op.aw, w.fileBufs = pipe.NewAsyncWriterWith(op.hw, w.fileBufs), nil
		} else {
			// Buffers of a whole sealed batch: the encrypter seals into
			// them in place (codec.Filler).
			op.aw = pipe.NewAsyncWriter(op.hw, codec.SealedBatch, 4)
		}
		dst = op.aw
	} else {
		bw, err := w.w.NewBlob(w.ctx, w.mediaType, oci.BlobOptions{OnUpload: w.onUpload})
		if err != nil {
			return err
		}
		op.bw, dst = bw, bw
	}
	w.parts = append(w.parts, op.st)
	w.cur = op
	if err := w.lw.Begin(dst); err != nil {
		return err
	}
	if w.stored {
		return w.lw.StoreRaw(true)
	}
	return nil
}

// endPart completes the open part: committed (stream mode) or queued for
// upload (file mode).
func (w *partsWriter) endPart() error {
	op := w.cur
	w.cur = nil
	op.st.plain = op.n
	err := w.lw.End()
	if op.bw != nil {
		if err != nil {
			op.bw.Abort()
			return err
		}
		if op.st.desc, err = op.bw.Commit(); err != nil {
			w.streamErr = err
			return err
		}
		return nil
	}
	if cerr := op.aw.Close(); err == nil {
		err = cerr
	}
	w.fileBufs = op.aw.Release()
	if err == nil {
		// Truncating at the size it has frees the blocks preallocated
		// beyond it (ext4, xfs).
		err = op.f.Truncate(op.hw.Size())
	}
	if cerr := op.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool %s: %w (give --spool-dir on a filesystem with room for the layer, or --no-spool)", op.st.file, err)
	}
	op.st.desc = op.hw.Descriptor(w.mediaType)
	w.enqueue(op.st)
	return nil
}

func (w *partsWriter) enqueue(st *partState) {
	if w.queue == nil {
		w.queue = make(chan *partState, maxFilesParts)
		for range partUploads {
			w.wg.Add(1)
			go w.uploader()
		}
	}
	w.queue <- st
}

func (w *partsWriter) uploader() {
	defer w.wg.Done()
	for st := range w.queue {
		if err := w.ctx.Err(); err != nil {
			w.setResult(st, 0, err)
			continue
		}
		sent, err := w.rw.PushFile(w.ctx, st.desc, st.file, nil, w.onUpload)
		if !w.keep {
			_ = os.Remove(st.file)
		}
		w.setResult(st, sent, err)
	}
}

// setResult records an upload's outcome (records() may read it meanwhile).
func (w *partsWriter) setResult(st *partState, sent int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st.sent, st.err = sent, err
	if err != nil && w.uploadErr == nil {
		w.uploadErr = err
	}
}

func (w *partsWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uploadErr
}

// Close ends production: the last part is completed (a layer has at least
// one part, an empty one if nothing was written). In file mode the uploads
// may still run: wait returns their outcome.
func (w *partsWriter) Close() error {
	if w.closed {
		return errors.New("parts writer already closed")
	}
	w.closed = true
	var err error
	if w.cur == nil && len(w.parts) == 0 {
		err = w.open()
	}
	if err == nil && w.cur != nil {
		err = w.endPart()
	}
	w.encoderEnd = true
	if zerr := w.lw.Stop(); err == nil {
		err = zerr
	}
	return w.cause(err)
}

// cause gives a failed commit's own error (stream mode) in place of err,
// which is then at most the producer's echo of it; else err.
func (w *partsWriter) cause(err error) error {
	if w.streamErr != nil {
		return w.streamErr
	}
	return err
}

// wait returns once every upload ended, with the first failure in part order.
func (w *partsWriter) wait() error {
	if w.queue != nil {
		close(w.queue)
		w.wg.Wait()
		w.queue = nil
	}
	w.cancel()
	for _, st := range w.parts {
		if st.err != nil {
			return st.err
		}
	}
	return nil
}

// abort drops a layer whose production failed: the uploads stop, the open
// part is dropped, and no part file is left (the layer is incomplete).
func (w *partsWriter) abort() {
	w.cancel()
	if !w.encoderEnd {
		w.encoderEnd = true
		if w.cur != nil {
			_ = w.lw.End() // into the open part, which is dropped next
		}
		_ = w.lw.Stop()
	}
	if op := w.cur; op != nil {
		w.cur = nil
		if op.bw != nil {
			op.bw.Abort()
		} else {
			_ = op.aw.Close()
			_ = op.f.Close()
		}
	}
	_ = w.wait()
	for _, st := range w.parts {
		if st.file != "" {
			_ = os.Remove(st.file)
		}
	}
}

// records are the parts for the spool's record, with the upload session of
// each failed upload that has one (a rerun resumes it).
func (w *partsWriter) records() []spoolPart {
	w.mu.Lock() // uploads may still run
	defer w.mu.Unlock()
	out := make([]spoolPart, len(w.parts))
	for i, st := range w.parts {
		out[i] = spoolPart{Descriptor: st.desc, PlainBytes: st.plain}
		var ue *oci.UploadError
		if errors.As(st.err, &ue) {
			out[i].Session = ue.Session
		}
	}
	return out
}

func (w *partsWriter) descriptors() []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, len(w.parts))
	for i, st := range w.parts {
		out[i] = st.desc
	}
	return out
}

// partCiphertextMax bounds the blob of a part of size plaintext bytes that
// does not compress: raw zstd blocks (3 bytes of header per 128 KiB), age's
// tag per 64 KiB chunk and its header, with room to spare.
func partCiphertextMax(size int64) int64 { return size + size/1024 + 64<<10 }

// partTitle is a part's org.opencontainers.image.title: the layer's own
// title for a layer in one part, else numbered so that the files `oras pull`
// writes sort in order (files.part0001.tar.zst.age, ...).
func partTitle(kind LayerKind, encrypted bool, i, n int) string {
	if n == 1 {
		return kind.title(encrypted)
	}
	t := fmt.Sprintf("%s.part%04d.tar.zst", kind, i+1)
	if encrypted {
		t += ".age"
	}
	return t
}

// layerDescriptors annotates a layer's parts for the manifest.
func layerDescriptors(kind LayerKind, encrypted bool, parts []ocispec.Descriptor) []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, len(parts))
	for i, d := range parts {
		d.Annotations = layerAnnotations(kind, encrypted)
		d.Annotations[ocispec.AnnotationTitle] = partTitle(kind, encrypted, i, len(parts))
		out[i] = d
	}
	return out
}

// PartResult is one part of a layer written in several (LayerResult.Parts).
type PartResult struct {
	Digest     string `json:"digest"`
	Size       int64  `json:"size"`
	PlainBytes int64  `json:"plainBytes"`
}

func partResults(parts []spoolPart) []PartResult {
	if len(parts) < 2 {
		return nil
	}
	out := make([]PartResult, len(parts))
	for i, p := range parts {
		out[i] = PartResult{Digest: p.Descriptor.Digest.String(), Size: p.Descriptor.Size, PlainBytes: p.PlainBytes}
	}
	return out
}

// randomKey names the files of a push that keeps nothing in the spool (a
// plaintext layer's parts): like a record's key, so that prune removes what
// a killed run left.
func randomKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
