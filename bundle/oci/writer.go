package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// Writer stores one bundle: large blobs streamed in before their digest is
// known, small blobs pushed whole, and last the manifest under the
// reference's tag. Nothing is visible under the tag until PushManifest, so an
// interrupted write leaves at most unreferenced blobs behind.
type Writer interface {
	// NewBlob starts a blob whose bytes are written to the returned
	// BlobWriter and whose descriptor Commit returns.
	NewBlob(ctx context.Context, mediaType string, opts BlobOptions) (BlobWriter, error)
	// PushBytes stores a small blob; it skips the upload when the target has it.
	PushBytes(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error)
	// PushManifest stores the manifest and points the reference's tag at it.
	PushManifest(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error)
	// Close commits (an archive is written now) and releases resources.
	Close() error
	// Abort releases resources and removes what a local writer made; for
	// failed writes.
	Abort()
}

// NewWriter opens ref for writing. A registry reference must carry a tag.
func NewWriter(ctx context.Context, ref Reference, opts RegistryOptions) (Writer, error) {
	switch ref.Transport {
	case TransportRegistry:
		if ref.Digest != "" {
			return nil, fmt.Errorf("cannot write to %s: a digest reference names existing content; give a tag", ref)
		}
		repo, err := newRepository(ref, opts)
		if err != nil {
			return nil, err
		}
		return &registryWriter{repo: repo, tag: ref.TagOrDefault(), chunk: opts.ChunkSize}, nil
	case TransportLayout:
		return newLayoutWriter(ctx, ref.Path, ref.TagOrDefault(), false)
	case TransportArchive:
		dir, err := os.MkdirTemp(filepath.Dir(ref.Path), ".bundle-archive-")
		if err != nil {
			return nil, fmt.Errorf("stage archive: %w", err)
		}
		lw, err := newLayoutWriter(ctx, dir, ref.TagOrDefault(), true)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		return &archiveWriter{layoutWriter: lw, path: ref.Path}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", ref.Transport)
}

// Resumer is a Writer to a registry: a blob a spool holds whole can be
// skipped when the registry has it, or uploaded from the spool file,
// resuming an earlier run's upload session.
type Resumer interface {
	// Exists reports whether the target holds the blob.
	Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error)
	// PushFile uploads the blob desc from path, a complete copy of it,
	// resuming session when the registry still has it. It returns the bytes
	// sent; its error is an *UploadError naming the session to resume.
	PushFile(ctx context.Context, desc ocispec.Descriptor, path string, session *UploadSession, onUpload func(int64)) (int64, error)
}

type registryWriter struct {
	repo  *remote.Repository
	tag   string
	chunk int
}

func (w *registryWriter) NewBlob(ctx context.Context, mediaType string, opts BlobOptions) (BlobWriter, error) {
	if opts.SpoolFile != "" {
		b, err := newSpoolBlob(ctx, w.repo, mediaType, opts)
		if err != nil {
			return nil, redact(err)
		}
		return b, nil
	}
	b, err := newMemBlob(ctx, w.repo, mediaType, w.chunk, opts)
	if err != nil {
		return nil, redact(err)
	}
	return b, nil
}

func (w *registryWriter) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	ok, err := w.repo.Exists(ctx, desc)
	return ok, redact(err)
}

func (w *registryWriter) PushFile(ctx context.Context, desc ocispec.Descriptor, path string, session *UploadSession, onUpload func(int64)) (int64, error) {
	var sent int64
	err := pushFile(ctx, w.repo, desc, path, session, onUpload, &sent)
	return sent, err // redacted: pushFile's is an *UploadError of a redacted error
}

func (w *registryWriter) PushBytes(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, b)
	if ok, err := w.repo.Exists(ctx, desc); err == nil && ok {
		return desc, nil
	}
	if err := w.repo.Push(ctx, desc, bytes.NewReader(b)); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: %w", desc.Digest, redact(err))
	}
	return desc, nil
}

func (w *registryWriter) PushManifest(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, b)
	if err := w.repo.PushReference(ctx, desc, bytes.NewReader(b), w.tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push manifest: %w", redact(err))
	}
	return desc, nil
}

func (w *registryWriter) Close() error { return nil }
func (w *registryWriter) Abort()       {}

// layoutWriter writes an OCI image layout: streamed blobs go to a temp file
// in the layout, hashed on the way, then are renamed into blobs/sha256.
type layoutWriter struct {
	dir     string
	tag     string
	store   *orasoci.Store
	created bool // the directory did not exist: Abort removes it
	temps   []string
}

func newLayoutWriter(ctx context.Context, dir, tag string, created bool) (*layoutWriter, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		created = true
	}
	store, err := orasoci.NewWithContext(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("open OCI layout %s: %w", dir, err)
	}
	return &layoutWriter{dir: dir, tag: tag, store: store, created: created}, nil
}

func (w *layoutWriter) NewBlob(ctx context.Context, mediaType string, opts BlobOptions) (BlobWriter, error) {
	f, err := os.CreateTemp(w.dir, ".ingest-")
	if err != nil {
		return nil, fmt.Errorf("stage blob: %w", err)
	}
	w.temps = append(w.temps, f.Name())
	hw := NewHashWriter(&pipe.FileWriter{F: f}, nil)
	return &layoutBlob{ctx: ctx, w: w, f: f, hw: hw, aw: pipe.NewAsyncWriter(hw, storeBufSize, storeBufs), mediaType: mediaType, onUpload: opts.OnUpload}, nil
}

// layoutBlob writes a blob to a temp file in the layout, hashed on the way
// in its own goroutine; Commit syncs it and renames it into blobs/sha256.
type layoutBlob struct {
	ctx       context.Context
	w         *layoutWriter
	f         *os.File
	hw        *HashWriter
	aw        *pipe.AsyncWriter
	mediaType string
	onUpload  func(int64)
	finished  bool
}

func (b *layoutBlob) Write(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := b.aw.Write(p)
	if b.onUpload != nil && n > 0 {
		b.onUpload(int64(n))
	}
	return n, err
}

func (b *layoutBlob) Commit() (ocispec.Descriptor, error) {
	if b.finished {
		return ocispec.Descriptor{}, errors.New("blob already committed")
	}
	b.finished = true
	err := b.aw.Close()
	if err == nil {
		err = b.f.Sync()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(b.f.Name())
		return ocispec.Descriptor{}, err
	}
	desc := b.hw.Descriptor(b.mediaType)
	blobDir := filepath.Join(b.w.dir, ocispec.ImageBlobsDir, desc.Digest.Algorithm().String())
	if err := os.MkdirAll(blobDir, 0o755); err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := os.Chmod(b.f.Name(), 0o644); err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := os.Rename(b.f.Name(), filepath.Join(blobDir, desc.Digest.Encoded())); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("store blob: %w", err)
	}
	return desc, nil
}

func (b *layoutBlob) Abort() {
	if b.finished {
		return
	}
	b.finished = true
	_ = b.aw.Close()
	_ = b.f.Close()
	_ = os.Remove(b.f.Name())
}

func (w *layoutWriter) PushBytes(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, b)
	if ok, err := w.store.Exists(ctx, desc); err == nil && ok {
		return desc, nil
	}
	if err := w.store.Push(ctx, desc, bytes.NewReader(b)); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("store %s: %w", desc.Digest, err)
	}
	return desc, nil
}

func (w *layoutWriter) PushManifest(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc, err := w.PushBytes(ctx, mediaType, b)
	if err != nil {
		return desc, err
	}
	if err := w.store.Tag(ctx, desc, w.tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("tag %s: %w", w.tag, err)
	}
	return desc, nil
}

func (w *layoutWriter) Close() error { return nil }

func (w *layoutWriter) Abort() {
	for _, t := range w.temps {
		_ = os.Remove(t)
	}
	if w.created {
		_ = os.RemoveAll(w.dir)
	}
}

// archiveWriter stages a layout next to the archive and tars it on Close.
type archiveWriter struct {
	*layoutWriter
	path string
}

func (w *archiveWriter) Close() error {
	defer os.RemoveAll(w.dir)
	return writeArchive(w.dir, w.path)
}

func (w *archiveWriter) Abort() { _ = os.RemoveAll(w.dir) }
