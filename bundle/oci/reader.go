package oci

import (
	"context"
	"fmt"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
)

// Source is a bundle's storage opened for reading.
type Source interface {
	// Resolve returns the descriptor of the manifest the reference names.
	Resolve(ctx context.Context) (ocispec.Descriptor, error)
	// Fetch streams a blob or manifest. It does not verify: callers wrap the
	// stream (bundle does, with the descriptor's digest and size).
	Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
	// Reference is what was opened.
	Reference() Reference
	// Close releases the source (an archive's file).
	Close() error
}

// NewSource opens ref for reading. A layout or archive reference without a tag
// picks "latest", or the only manifest when the index holds exactly one.
func NewSource(ctx context.Context, ref Reference, opts RegistryOptions) (Source, error) {
	switch ref.Transport {
	case TransportRegistry:
		c, err := registry.New(opts.Registry())
		if err != nil {
			return nil, err
		}
		h1, err := c.HTTP1()
		if err != nil {
			return nil, err
		}
		return &registrySource{ref: ref, repo: c.Repository(ref.Registry, ref.Repository), ranges: h1.Repository(ref.Registry, ref.Repository)}, nil
	case TransportLayout:
		return newLayoutDirSource(ref)
	case TransportArchive:
		return newArchiveSource(ref)
	}
	return nil, fmt.Errorf("unknown transport %q", ref.Transport)
}

type registrySource struct {
	ref  Reference
	repo *remote.Repository
	// ranges is repo on connections of their own (HTTP/1.1), for the
	// ranges of a Sequence.
	ranges *remote.Repository
}

func (s *registrySource) Reference() Reference { return s.ref }
func (s *registrySource) Close() error         { return nil }

func (s *registrySource) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.repo.Fetch(ctx, desc)
	if err != nil {
		return nil, redact(err)
	}
	return rc, nil
}

func (s *registrySource) Resolve(ctx context.Context) (ocispec.Descriptor, error) {
	ref := s.ref.TagOrDefault()
	if s.ref.Digest != "" {
		ref = s.ref.Digest.String()
	}
	desc, err := s.repo.Resolve(ctx, ref)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %w", s.ref, redact(err))
	}
	return desc, nil
}
