package oci

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// benchBundle writes a bundle-shaped artifact (three 8 MiB layers, a config
// and a manifest) to ref, as bundle create does.
func benchBundle(b *testing.B, ref Reference) {
	b.Helper()
	ctx := context.Background()
	w, err := NewWriter(ctx, ref, RegistryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var layers []ocispec.Descriptor
	for i := range 3 {
		bw, err := w.NewBlob(ctx, "application/octet-stream", BlobOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for j := range 8 {
			chunk[0], chunk[1] = byte(i), byte(j)
			if _, err := bw.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		d, err := bw.Commit()
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, d)
	}
	cfg, err := w.PushBytes(ctx, "application/vnd.oci.empty.v1+json", []byte("{}"))
	if err != nil {
		b.Fatal(err)
	}
	m, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: layers})
	if _, err := w.PushManifest(ctx, ocispec.MediaTypeImageManifest, m); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// readBundle opens ref, resolves its tag and reads the manifest and every blob.
func readBundle(b *testing.B, ref Reference) {
	ctx := context.Background()
	s, err := NewSource(ctx, ref, RegistryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	desc, err := s.Resolve(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rc, err := s.Fetch(ctx, desc)
	if err != nil {
		b.Fatal(err)
	}
	var m ocispec.Manifest
	err = json.NewDecoder(rc).Decode(&m)
	rc.Close()
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		rc, err := s.Fetch(ctx, d)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != d.Size {
			b.Fatalf("%s: %d of %d bytes, %v", d.Digest, n, d.Size, err)
		}
	}
}

func BenchmarkArchiveWrite(b *testing.B) {
	dir := b.TempDir()
	ref := Reference{Transport: TransportArchive, Path: filepath.Join(dir, "bundle.tar"), Tag: "v1"}
	b.SetBytes(24 << 20)
	for b.Loop() {
		benchBundle(b, ref)
	}
}

func BenchmarkArchiveRead(b *testing.B) {
	ref := Reference{Transport: TransportArchive, Path: filepath.Join(b.TempDir(), "bundle.tar"), Tag: "v1"}
	benchBundle(b, ref)
	b.SetBytes(24 << 20)
	b.ReportAllocs()
	for b.Loop() {
		readBundle(b, ref)
	}
}

func BenchmarkLayoutRead(b *testing.B) {
	ref := Reference{Transport: TransportLayout, Path: filepath.Join(b.TempDir(), "layout"), Tag: "v1"}
	benchBundle(b, ref)
	b.SetBytes(24 << 20)
	b.ReportAllocs()
	for b.Loop() {
		readBundle(b, ref)
	}
}
