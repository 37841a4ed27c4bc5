package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	orasoci "oras.land/oras-go/v2/content/oci"
)

// Source is a bundle's storage opened for reading.
type Source interface {
	// Resolve returns the descriptor of the manifest the reference names.
	Resolve(ctx context.Context) (ocispec.Descriptor, error)
	// Fetch streams a blob or manifest. It does not verify: callers wrap the
	// stream (bundle does, with the descriptor's digest and size).
	Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
	// Target is the underlying oras target, for copies.
	Target() oras.ReadOnlyTarget
	// Reference is what was opened.
	Reference() Reference
}

// NewSource opens ref for reading. A layout or archive reference without a tag
// picks "latest", or the only manifest when the index holds exactly one.
func NewSource(ctx context.Context, ref Reference, opts RegistryOptions) (Source, error) {
	switch ref.Transport {
	case TransportRegistry:
		repo, err := newRepository(ref, opts)
		if err != nil {
			return nil, err
		}
		return &source{ref: ref, target: repo, resolveRef: registryRef(ref)}, nil
	case TransportLayout:
		fi, err := os.Stat(ref.Path)
		if err != nil {
			return nil, fmt.Errorf("open OCI layout: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("open OCI layout %s: not a directory (an archive is oci-archive:%s)", ref.Path, ref.Path)
		}
		store, err := orasoci.NewFromFS(ctx, os.DirFS(ref.Path))
		if err != nil {
			return nil, fmt.Errorf("open OCI layout %s: %w", ref.Path, err)
		}
		return &source{ref: ref, target: store, resolveRef: ref.Tag, index: filepath.Join(ref.Path, ocispec.ImageIndexFile)}, nil
	case TransportArchive:
		store, err := orasoci.NewFromTar(ctx, ref.Path)
		if err != nil {
			return nil, fmt.Errorf("open OCI archive %s: %w", ref.Path, err)
		}
		return &source{ref: ref, target: store, resolveRef: ref.Tag, single: store}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", ref.Transport)
}

func registryRef(ref Reference) string {
	if ref.Digest != "" {
		return ref.Digest.String()
	}
	return ref.TagOrDefault()
}

type source struct {
	ref        Reference
	target     oras.ReadOnlyTarget
	resolveRef string
	index      string                 // layout: index.json, for the single-manifest fallback
	single     *orasoci.ReadOnlyStore // archive: its tags, for the same fallback
}

func (s *source) Reference() Reference        { return s.ref }
func (s *source) Target() oras.ReadOnlyTarget { return s.target }

func (s *source) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return s.target.Fetch(ctx, desc)
}

func (s *source) Resolve(ctx context.Context) (ocispec.Descriptor, error) {
	if s.resolveRef != "" {
		desc, err := s.target.Resolve(ctx, s.resolveRef)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %w", s.ref, err)
		}
		return desc, nil
	}
	desc, err := s.target.Resolve(ctx, defaultTag)
	if err == nil {
		return desc, nil
	}
	if only, ok := s.onlyManifest(ctx); ok {
		return only, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("resolve %s: no tag given, no %q tag, and the index does not hold exactly one manifest: %w", s.ref, defaultTag, err)
}

func (s *source) onlyManifest(ctx context.Context) (ocispec.Descriptor, bool) {
	if s.index != "" {
		b, err := os.ReadFile(s.index)
		if err != nil {
			return ocispec.Descriptor{}, false
		}
		var idx ocispec.Index
		if json.Unmarshal(b, &idx) != nil || len(idx.Manifests) != 1 {
			return ocispec.Descriptor{}, false
		}
		return idx.Manifests[0], true
	}
	if s.single != nil {
		var tags []string
		_ = s.single.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil })
		if len(tags) == 1 {
			d, err := s.single.Resolve(ctx, tags[0])
			return d, err == nil
		}
	}
	return ocispec.Descriptor{}, false
}
