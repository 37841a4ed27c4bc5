package oci

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestLayoutAndArchive_RoundTrip writes a bundle-shaped artifact and a
// signature referring to it to a layout and to an archive, and reads both
// back: untagged resolve picks the bundle (not the signature), blobs come
// back whole, and a missing blob or tag is IsNotFound.
func TestLayoutAndArchive_RoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(ref Reference) ocispec.Descriptor {
		w, err := NewWriter(ctx, ref, RegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bw, err := w.NewBlob(ctx, "application/octet-stream", BlobOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bw.Write([]byte("layer data"))
		layer, err := bw.Commit()
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := w.PushBytes(ctx, "application/vnd.oci.empty.v1+json", []byte("{}"))
		m, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer}})
		md, err := w.PushManifest(ctx, ocispec.MediaTypeImageManifest, m)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: "application/vnd.dev.cosign.artifact.sig.v1+json", Config: cfg, Layers: []ocispec.Descriptor{cfg}, Subject: &md})
		sd := ReferrerDescriptor(sig, "application/vnd.dev.cosign.artifact.sig.v1+json")
		if err := w.(ReferrerWriter).PushReferrer(ctx, sd, sig, "sha256-"+md.Digest.Encoded()+".sig"); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return layer
	}
	refs := []Reference{
		{Transport: TransportLayout, Path: filepath.Join(dir, "layout")},
		{Transport: TransportArchive, Path: filepath.Join(dir, "a.tar")},
	}
	var layer ocispec.Descriptor
	for _, ref := range refs {
		layer = write(ref)
		s, err := NewSource(ctx, Reference{Transport: ref.Transport, Path: ref.Path}, RegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := s.Resolve(ctx)
		if err != nil {
			t.Fatalf("%s: %v", ref.Path, err)
		}
		if desc.Annotations[ocispec.AnnotationRefName] != "latest" {
			t.Fatalf("%s: resolved %+v, want the bundle tagged latest", ref.Path, desc)
		}
		rc, err := s.Fetch(ctx, layer)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "layer data" {
			t.Fatalf("%s: layer = %q", ref.Path, got)
		}
		sigs, err := s.(ReferrerSource).Referrers(ctx, desc, "application/vnd.dev.cosign.artifact.sig.v1+json")
		if err != nil || len(sigs) != 1 {
			t.Fatalf("%s: referrers = %v, %v", ref.Path, sigs, err)
		}
		if _, err := s.(ReferrerSource).ResolveTag(ctx, "nope"); !IsNotFound(err) {
			t.Fatalf("%s: missing tag: %v", ref.Path, err)
		}
		missing := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromString("absent"), Size: 6}
		if _, err := s.Fetch(ctx, missing); !IsNotFound(err) {
			t.Fatalf("%s: missing blob: %v", ref.Path, err)
		}
		s.Close()
	}
}
