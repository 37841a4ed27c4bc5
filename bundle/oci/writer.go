package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
)

// Writer stores one bundle: large blobs streamed in before their digest is
// known, small blobs pushed whole, and last the manifest under the
// reference's tag. Nothing is visible under the tag until PushManifest, so an
// interrupted write leaves at most unreferenced blobs behind.
type Writer interface {
	// PushStream stores everything r yields as one blob and returns its descriptor.
	PushStream(ctx context.Context, mediaType string, r io.Reader) (ocispec.Descriptor, error)
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

type registryWriter struct {
	repo  *remote.Repository
	tag   string
	chunk int
}

func (w *registryWriter) PushStream(ctx context.Context, mediaType string, r io.Reader) (ocispec.Descriptor, error) {
	return streamUpload(ctx, w.repo, mediaType, r, w.chunk)
}

func (w *registryWriter) PushBytes(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, b)
	if ok, err := w.repo.Exists(ctx, desc); err == nil && ok {
		return desc, nil
	}
	if err := w.repo.Push(ctx, desc, bytes.NewReader(b)); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: %w", desc.Digest, err)
	}
	return desc, nil
}

func (w *registryWriter) PushManifest(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, b)
	if err := w.repo.PushReference(ctx, desc, bytes.NewReader(b), w.tag); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push manifest: %w", err)
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

func (w *layoutWriter) PushStream(ctx context.Context, mediaType string, r io.Reader) (ocispec.Descriptor, error) {
	f, err := os.CreateTemp(w.dir, ".ingest-")
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("stage blob: %w", err)
	}
	w.temps = append(w.temps, f.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), contextReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigest(digest.SHA256, h), Size: n}
	blobDir := filepath.Join(w.dir, ocispec.ImageBlobsDir, desc.Digest.Algorithm().String())
	if err := os.MkdirAll(blobDir, 0o755); err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := os.Rename(f.Name(), filepath.Join(blobDir, desc.Digest.Encoded())); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("store blob: %w", err)
	}
	return desc, nil
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

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
