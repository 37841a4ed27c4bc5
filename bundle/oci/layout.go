package oci

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"
)

// layoutSource reads an OCI image layout from a directory or a tar of one
// through oras-go's read-only OCI store. Fetch does not verify what it reads
// (callers verify every blob against its descriptor), so a damaged layer
// reaches the caller's verifier and is reported as exactly that; the store
// itself reads and checks the manifests index.json names when it opens.
type layoutSource struct {
	ref   Reference
	store *orasoci.ReadOnlyStore
}

func newLayoutDirSource(ctx context.Context, ref Reference) (*layoutSource, error) {
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
	return &layoutSource{ref: ref, store: store}, nil
}

// newArchiveSource indexes the tar's regular files once and then serves them
// as sections of the file: no extraction.
func newArchiveSource(ctx context.Context, ref Reference) (*layoutSource, error) {
	store, err := orasoci.NewFromTar(ctx, ref.Path)
	if err != nil {
		return nil, fmt.Errorf("open OCI archive %s: %w", ref.Path, err)
	}
	return &layoutSource{ref: ref, store: store}, nil
}

func (s *layoutSource) Reference() Reference { return s.ref }

func (s *layoutSource) Close() error { return nil }

func (s *layoutSource) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("descriptor digest %q: %w", desc.Digest, err)
	}
	return s.store.Fetch(ctx, desc)
}

// tagged returns the index.json entries that carry a tag
// (org.opencontainers.image.ref.name), in tag order.
func (s *layoutSource) tagged(ctx context.Context) ([]ocispec.Descriptor, error) {
	var tags []string
	if err := s.store.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%s: list tags: %w", s.ref, err)
	}
	out := make([]ocispec.Descriptor, 0, len(tags))
	for _, t := range tags {
		d, err := s.store.Resolve(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("%s: resolve %s: %w", s.ref, t, err)
		}
		out = append(out, d)
	}
	return out, nil
}

var errNotExist = fs.ErrNotExist

// Resolve finds the manifest tagged with the reference's tag in index.json
// (org.opencontainers.image.ref.name); without a tag, "latest" or the only
// one (signatures, which refer to a bundle, do not count).
func (s *layoutSource) Resolve(ctx context.Context) (ocispec.Descriptor, error) {
	want := s.ref.Tag
	if want == "" {
		want = defaultTag
	}
	all, err := s.tagged(ctx)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	var others []ocispec.Descriptor
	for _, m := range all {
		if m.Annotations[ocispec.AnnotationRefName] == want {
			return m, nil
		}
		if !isReferrerEntry(m) {
			others = append(others, m)
		}
	}
	if s.ref.Tag == "" && len(others) == 1 {
		return others[0], nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: no manifest tagged %q in %s: %w", s.ref, want, ocispec.ImageIndexFile, errNotExist)
}

// Referrers lists the tagged index.json entries of artifactType.
func (s *layoutSource) Referrers(ctx context.Context, _ ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	all, err := s.tagged(ctx)
	if err != nil {
		return nil, err
	}
	var out []ocispec.Descriptor
	for _, m := range all {
		if m.ArtifactType == artifactType && len(out) < MaxReferrers {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *layoutSource) ResolveTag(ctx context.Context, tag string) (ocispec.Descriptor, error) {
	all, err := s.tagged(ctx)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	for _, m := range all {
		if m.Annotations[ocispec.AnnotationRefName] == tag {
			return m, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: no manifest tagged %q: %w", s.ref, tag, errNotExist)
}
