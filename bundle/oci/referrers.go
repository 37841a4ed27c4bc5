package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// MaxReferrers bounds how many referrers of a manifest are looked at: a
// hostile repository could list any number.
const MaxReferrers = 32

// ReferrerWriter stores a manifest that refers to another one (its subject,
// OCI 1.1) and tags it. On a registry without the referrers API, oras-go
// also records it in the referrers tag schema's index (tag sha256-<hex>).
type ReferrerWriter interface {
	PushReferrer(ctx context.Context, desc ocispec.Descriptor, manifest []byte, tag string) error
}

// ReferrerSource finds the manifests that refer to a manifest.
type ReferrerSource interface {
	// Referrers lists up to MaxReferrers manifests whose subject is subject
	// and whose artifactType is artifactType (the referrers API, or the
	// referrers tag schema where a registry has no such API; in a layout,
	// the index.json entries of that artifactType).
	Referrers(ctx context.Context, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error)
	// ResolveTag resolves another tag of the same repository or layout;
	// the error satisfies IsNotFound when there is none.
	ResolveTag(ctx context.Context, tag string) (ocispec.Descriptor, error)
}

var errEnough = errors.New("enough referrers")

func (w *registryWriter) PushReferrer(ctx context.Context, desc ocispec.Descriptor, b []byte, tag string) error {
	if err := w.repo.PushReference(ctx, desc, bytes.NewReader(b), tag); err != nil {
		return fmt.Errorf("push %s: %w", tag, redact(err))
	}
	return nil
}

func (w *layoutWriter) PushReferrer(ctx context.Context, desc ocispec.Descriptor, b []byte, tag string) error {
	if ok, err := w.store.Exists(ctx, desc); err != nil || !ok {
		if err := w.store.Push(ctx, desc, bytes.NewReader(b)); err != nil {
			return fmt.Errorf("store %s: %w", desc.Digest, err)
		}
	}
	if err := w.store.Tag(ctx, desc, tag); err != nil {
		return fmt.Errorf("tag %s: %w", tag, err)
	}
	return nil
}

func (s *registrySource) Referrers(ctx context.Context, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	err := s.repo.Referrers(ctx, subject, artifactType, func(page []ocispec.Descriptor) error {
		for _, d := range page {
			if len(out) == MaxReferrers {
				return errEnough
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return out, fmt.Errorf("list the referrers of %s: %w", subject.Digest, redact(err))
	}
	return out, nil
}

func (s *registrySource) ResolveTag(ctx context.Context, tag string) (ocispec.Descriptor, error) {
	desc, err := s.repo.Resolve(ctx, tag)
	return desc, redact(err)
}

func (s *layoutSource) Referrers(_ context.Context, _ ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	idx, err := s.index()
	if err != nil {
		return nil, err
	}
	var out []ocispec.Descriptor
	for _, m := range idx.Manifests {
		if m.ArtifactType == artifactType && len(out) < MaxReferrers {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *layoutSource) ResolveTag(_ context.Context, tag string) (ocispec.Descriptor, error) {
	idx, err := s.index()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	for _, m := range idx.Manifests {
		if m.Annotations[ocispec.AnnotationRefName] == tag {
			return m, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: no manifest tagged %q: %w", s.ref, tag, errNotExist)
}

// isReferrerEntry tells an index.json entry that refers to another manifest
// (a signature, a restore image) from a bundle, for the "only manifest" rule
// of Resolve.
func isReferrerEntry(d ocispec.Descriptor) bool {
	name := d.Annotations[ocispec.AnnotationRefName]
	return d.ArtifactType == "application/vnd.dev.cosign.artifact.sig.v1+json" ||
		d.ArtifactType == "application/vnd.kubectl-assisted.restore-image.v1" ||
		(strings.HasPrefix(name, "sha256-") && (strings.HasSuffix(name, ".sig") || strings.HasSuffix(name, ".restore-image")))
}

// ReferrerDescriptor is the descriptor of a referrer manifest, carrying its
// artifactType (index.json and referrers listings show it).
func ReferrerDescriptor(b []byte, artifactType string) ocispec.Descriptor {
	d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b)
	d.ArtifactType = artifactType
	return d
}
