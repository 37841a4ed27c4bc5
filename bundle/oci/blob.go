package oci

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// BlobWriter takes a blob's bytes as they are produced; the target stores
// them on the way. Its digest and size are known at Commit.
type BlobWriter interface {
	Write(p []byte) (int, error)
	// Commit ends the blob and returns once the target holds it. With a
	// spool file, a failed upload still returns the complete blob's
	// descriptor along with an *UploadError: the spool holds the blob.
	Commit() (ocispec.Descriptor, error)
	// Abort drops the blob, its spool file and its upload session; for a
	// producer that failed. It is a no-op after Commit.
	Abort()
}

// BlobOptions tune Writer.NewBlob.
type BlobOptions struct {
	// SpoolFile is a file to create and write the blob to as it is
	// produced; a registry upload then reads from it (see Spool in the
	// bundle package), and resends from it after a failure. Empty streams
	// through memory: at most memChunks upload chunks are held. Local targets
	// write their own file and ignore it.
	SpoolFile string
	// OnUpload is called with the number of bytes the target just took.
	OnUpload func(n int64)
	// OnComplete is called, with a spool file, once the file holds the
	// whole blob, before Commit waits for the end of the upload.
	OnComplete func(desc ocispec.Descriptor)
}

// Sizes of the stages that hash and store a blob: buffers of this size, a
// few in flight, each written to its file in writes of pipe.FileWriteSize.
const (
	storeBufSize = 256 << 10
	storeBufs    = 8
)

// HashWriter hashes and counts what goes to its writer, so that a blob's
// descriptor is known the moment its last byte is written.
type HashWriter struct {
	w     io.Writer
	h     hash.Hash
	n     int64
	after func(total int64)
}

// NewHashWriter returns a HashWriter onto w; after, when not nil, is called
// with the running total after each write that wrote something.
func NewHashWriter(w io.Writer, after func(total int64)) *HashWriter {
	return &HashWriter{w: w, h: sha256.New(), after: after}
}

func (h *HashWriter) Write(p []byte) (int, error) {
	h.h.Write(p)
	n, err := h.w.Write(p)
	h.n += int64(n)
	if h.after != nil && n > 0 {
		h.after(h.n)
	}
	return n, err
}

// Size is the number of bytes written.
func (h *HashWriter) Size() int64 { return h.n }

// Descriptor describes what was written, as a blob of mediaType.
func (h *HashWriter) Descriptor(mediaType string) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigest(digest.SHA256, h.h), Size: h.n}
}

// memChunks is how many chunks a memBlob holds: one being filled, one being
// sent and one filled ahead, so the producer does not wait for every PATCH.
const memChunks = 3

// memBlob streams a blob to a registry from memory: chunks of
// DefaultChunkSize, memChunks at a time, sent in order by the upload
// goroutine and hashed beside the PATCH that sends them.
// A chunk that fails is resent from the offset the registry reports; a
// session the registry dropped cannot be replayed (the bytes are gone).
type memBlob struct {
	u         *uploader
	abort     context.CancelFunc
	mediaType string
	onUpload  func(int64)
	free      chan []byte
	full      chan []byte
	failed    chan struct{}
	done      chan struct{}
	cur       []byte
	h         hash.Hash
	size      int64
	uerr      error
	finished  bool
}

func newMemBlob(ctx context.Context, repo *remote.Repository, mediaType string, chunk int, opts BlobOptions) (*memBlob, error) {
	u := newUploader(ctx, repo)
	if err := u.start(); err != nil {
		return nil, err
	}
	var abort context.CancelFunc
	u.ctx, abort = context.WithCancel(u.ctx)
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	chunk = max(chunk, u.minChunk)
	b := &memBlob{u: u, abort: abort, mediaType: mediaType, onUpload: opts.OnUpload, free: make(chan []byte, memChunks), full: make(chan []byte, memChunks),
		failed: make(chan struct{}), done: make(chan struct{}), h: sha256.New()}
	for range memChunks - 1 {
		b.free <- make([]byte, 0, chunk)
	}
	b.cur = make([]byte, 0, chunk)
	go b.run()
	return b, nil
}

func (b *memBlob) run() {
	defer close(b.done)
	for c := range b.full {
		if b.uerr == nil {
			// The hash and the PATCH only read c: they run side by side,
			// and the next chunk waits for both (the hash stays in order).
			hashed := make(chan struct{})
			go func() {
				b.h.Write(c)
				close(hashed)
			}()
			start := b.size
			b.size += int64(len(c))
			err := b.u.patch(memBody{data: c, start: start})
			<-hashed
			if err != nil {
				b.uerr = err
				close(b.failed)
			} else if b.onUpload != nil {
				b.onUpload(int64(len(c)))
			}
		}
		b.free <- c[:0]
	}
}

func (b *memBlob) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m := copy(b.cur[len(b.cur):cap(b.cur)], p)
		b.cur = b.cur[:len(b.cur)+m]
		p, n = p[m:], n+m
		if len(b.cur) == cap(b.cur) {
			select {
			case <-b.failed:
				return n, b.uploadErr()
			case <-b.u.ctx.Done():
				return n, b.u.ctx.Err()
			default:
			}
			b.full <- b.cur
			select {
			case b.cur = <-b.free:
			case <-b.failed:
				b.cur = nil
				return n, b.uploadErr()
			}
		}
	}
	return n, nil
}

// uploadErr is the upload goroutine's error; call it after failed is closed.
func (b *memBlob) uploadErr() error { return b.uerr }

func (b *memBlob) stop() {
	if b.finished {
		return
	}
	b.finished = true
	if len(b.cur) > 0 {
		b.full <- b.cur
		b.cur = nil
	}
	close(b.full)
	<-b.done
}

func (b *memBlob) Commit() (ocispec.Descriptor, error) {
	if b.finished {
		return ocispec.Descriptor{}, errors.New("blob already committed")
	}
	b.stop()
	if b.uerr != nil {
		b.u.cancel()
		b.abort()
		return ocispec.Descriptor{}, b.uerr
	}
	desc := ocispec.Descriptor{MediaType: b.mediaType, Digest: digest.NewDigest(digest.SHA256, b.h), Size: b.size}
	err := b.u.finish(desc.Digest)
	b.abort()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return desc, nil
}

func (b *memBlob) Abort() {
	if b.finished {
		return
	}
	b.abort() // fails the chunk in flight; the queued ones are not sent
	b.cur = nil
	b.stop()
	b.u.cancel()
}

// spoolBlob writes the blob to a spool file (hashed on the way, in its own
// goroutine) and uploads it from that file as it grows, in chunks the kernel
// sends without copying them through this process. The producer never waits
// for the network: the file absorbs the difference. When the upload fails
// the producer still runs to the end of the blob, so the spool holds it
// whole for a later run (see PushFile); cancelling the context stops both.
type spoolBlob struct {
	ctx        context.Context
	cancel     context.CancelFunc
	path       string
	f          *os.File
	hw         *HashWriter
	aw         *pipe.AsyncWriter
	u          *uploader
	mediaType  string
	onUpload   func(int64)
	onComplete func(ocispec.Descriptor)

	mu        sync.Mutex
	cond      *sync.Cond
	committed int64 // bytes in the file
	closed    bool  // the producer is done: committed is the blob's size
	uerr      error
	upDone    chan struct{}
	finished  bool
}

func newSpoolBlob(ctx context.Context, repo *remote.Repository, mediaType string, opts BlobOptions) (*spoolBlob, error) {
	u := newUploader(ctx, repo)
	if err := u.start(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(opts.SpoolFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		u.cancel()
		return nil, fmt.Errorf("spool: %w", err)
	}
	ctx, cancel := context.WithCancel(u.ctx)
	u.ctx = ctx // the upload stops with Abort too
	b := &spoolBlob{ctx: ctx, cancel: cancel, path: opts.SpoolFile, f: f, u: u, mediaType: mediaType, onUpload: opts.OnUpload, onComplete: opts.OnComplete, upDone: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	b.hw = NewHashWriter(&pipe.FileWriter{F: f}, b.grew)
	b.aw = pipe.NewAsyncWriter(b.hw, storeBufSize, storeBufs)
	stopWake := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	go func() {
		defer close(b.upDone)
		defer stopWake()
		b.upload()
	}()
	return b, nil
}

func (b *spoolBlob) grew(total int64) {
	b.mu.Lock()
	b.committed = total
	b.cond.Broadcast()
	b.mu.Unlock()
}

// upload sends what the file holds: at least the registry's minimum chunk at
// a time, up to maxFileChunk, until the producer is done and all is sent.
func (b *spoolBlob) upload() {
	minChunk := int64(max(DefaultChunkSize, b.u.minChunk))
	for {
		b.mu.Lock()
		for !b.closed && b.committed-b.u.offset < minChunk && b.ctx.Err() == nil {
			b.cond.Wait()
		}
		committed, closed := b.committed, b.closed
		b.mu.Unlock()
		if err := b.ctx.Err(); err != nil {
			b.setErr(err)
			return
		}
		if closed && b.u.offset >= committed {
			return
		}
		n := min(committed-b.u.offset, maxFileChunk)
		start := b.u.offset
		if err := b.u.patch(fileBody{path: b.path, start: start, end: start + n}); err != nil {
			b.setErr(err)
			return
		}
		if b.onUpload != nil {
			b.onUpload(b.u.offset - start)
		}
	}
}

func (b *spoolBlob) setErr(err error) {
	b.mu.Lock()
	b.uerr = err
	b.mu.Unlock()
}

func (b *spoolBlob) Write(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := b.aw.Write(p)
	if err != nil {
		return n, fmt.Errorf("spool %s: %w (give --spool-dir on a filesystem with room for the layer, or --no-spool)", b.path, err)
	}
	return n, nil
}

// Commit completes the spool file, waits for the upload to send its end and
// completes the upload. An upload that failed, here or before, is retried
// from the file in a new session once when the registry dropped the old one.
func (b *spoolBlob) Commit() (ocispec.Descriptor, error) {
	if b.finished {
		return ocispec.Descriptor{}, errors.New("blob already committed")
	}
	b.finished = true
	werr := b.aw.Close()
	if cerr := b.f.Close(); werr == nil {
		werr = cerr
	}
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	if werr != nil {
		b.cancel()
		<-b.upDone
		b.u.cancel()
		_ = os.Remove(b.path)
		return ocispec.Descriptor{}, fmt.Errorf("spool %s: %w", b.path, werr)
	}
	desc := b.hw.Descriptor(b.mediaType)
	if b.onComplete != nil {
		b.onComplete(desc) // the spool holds the blob whole, whatever the upload does now
	}
	<-b.upDone
	b.mu.Lock()
	uerr := b.uerr
	b.mu.Unlock()
	if uerr == nil {
		uerr = b.u.finish(desc.Digest)
	}
	defer b.cancel()
	if uerr != nil {
		if errors.Is(uerr, context.Canceled) || errors.Is(uerr, context.DeadlineExceeded) {
			return desc, &UploadError{Session: b.u.Session(), Err: uerr}
		}
		// The blob is whole in the file: one more try from where the
		// registry stands, or in a new session from the start.
		return desc, pushFile(b.u.ctx, b.u.repo, desc, b.path, b.u.Session(), b.onUpload, nil)
	}
	return desc, nil
}

func (b *spoolBlob) Abort() {
	if b.finished {
		return
	}
	b.finished = true
	b.cancel()
	_ = b.aw.Close()
	_ = b.f.Close()
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	<-b.upDone
	b.u.cancel()
	_ = os.Remove(b.path)
}

// pushFile uploads a complete blob from a file: it resumes session when the
// registry still has it, else starts a new one. On failure the error is an
// *UploadError with the session to resume. sent, when not nil, counts the
// bytes put on the wire.
func pushFile(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, path string, session *UploadSession, onUpload func(int64), sent *int64) error {
	u := newUploader(ctx, repo)
	defer func() {
		if sent != nil {
			*sent += u.sent
		}
	}()
	resumed := false
	if session != nil {
		if err := u.resume(*session); err == nil && u.offset <= desc.Size {
			resumed = true
		}
	}
	for attempt := 0; ; attempt++ {
		if !resumed {
			if err := u.start(); err != nil {
				// Unreachable: the session of before may still be good.
				return &UploadError{Session: session, Err: err}
			}
		}
		err := sendFile(u, desc, path, onUpload)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || attempt > 0 {
			return &UploadError{Session: u.Session(), Err: err}
		}
		// A resumed session that does not complete (the registry kept a
		// different prefix, or dropped it): start over once. Should the
		// registry be unreachable by then, the session that failed is the
		// one to resume later (the DELETE did not reach it either).
		if s := u.Session(); s != nil {
			session = s
		}
		u.cancel()
		resumed = false
	}
}

func sendFile(u *uploader, desc ocispec.Descriptor, path string, onUpload func(int64)) error {
	for u.offset < desc.Size {
		start := u.offset
		n := min(desc.Size-start, maxFileChunk)
		if err := u.patch(fileBody{path: path, start: start, end: start + n}); err != nil {
			return err
		}
		if onUpload != nil {
			onUpload(u.offset - start)
		}
	}
	return u.finish(desc.Digest)
}
