// Package synthetic builds test stand-ins for OpenShift release artifacts: a
// release image whose image-references name the agent-installer images, and a
// machine-os-images image that carries a live ISO, pushed to a real registry.
package synthetic

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
)

// ReleaseOptions describe the payload to push.
type ReleaseOptions struct {
	// Host is the registry (HOST:PORT, plain HTTP).
	Host string
	// ReleaseRepo and ArtRepo are the repositories of the release image and of
	// the component images (like ocp-release and ocp-v4.0-art-dev).
	ReleaseRepo, ArtRepo string
	// ISOs maps RPM architectures to the live ISO bytes machine-os-images holds;
	// each architecture becomes one platform of the release and
	// machine-os-images indexes.
	ISOs map[string][]byte
	// RefHost replaces Host in the image-references (so references name a
	// source registry that only mirrors serve); empty means Host.
	RefHost string
	// Omit leaves these names out of image-references.
	Omit []string
}

// Release is what was pushed.
type Release struct {
	// Digest of the release index; Ref is Host/ReleaseRepo@Digest.
	Digest string
	Ref    string
	// Images are the image-references entries (name -> reference).
	Images map[string]string
}

// AgentImages are the payload images a day-2 ISO names.
var AgentImages = []string{"agent-installer-api-server", "agent-installer-node-agent", "agent-installer-orchestrator", "agent-installer-csr-approver", "agent-installer-utils"}

// PushRelease pushes machine-os-images, one tiny image per agent image, and the
// release image (an OCI index with one manifest per architecture).
func PushRelease(t testing.TB, o ReleaseOptions) *Release {
	t.Helper()
	ctx := context.Background()
	refHost := o.RefHost
	if refHost == "" {
		refHost = o.Host
	}
	art := repo(t, o.Host, o.ArtRepo)
	images := map[string]string{}
	var archs []string
	osLayers := map[string][]byte{}
	for arch, isoBytes := range o.ISOs {
		archs = append(archs, arch)
		osLayers[arch] = tarGz(t, map[string][]byte{
			fmt.Sprintf("coreos/coreos-%s.iso", arch):        isoBytes,
			fmt.Sprintf("coreos/coreos-%s.iso.sha256", arch): []byte(digest.FromBytes(isoBytes).Encoded()),
		})
	}
	// machine-os-images: an index of single-layer images.
	images["machine-os-images"] = refHost + "/" + o.ArtRepo + "@" + pushIndex(t, ctx, art, archs, func(arch string) [][]byte {
		return [][]byte{tarGz(t, map[string][]byte{"etc/os-release": []byte("ID=rhcos\n")}), osLayers[arch]}
	})
	for _, name := range AgentImages {
		d := pushIndex(t, ctx, art, archs, func(arch string) [][]byte {
			return [][]byte{tarGz(t, map[string][]byte{"usr/share/" + name: []byte(name + " " + arch)})}
		})
		images[name] = refHost + "/" + o.ArtRepo + "@" + d
	}
	omit := map[string]bool{}
	for _, n := range o.Omit {
		omit[n] = true
	}
	var tags []map[string]any
	for name, ref := range images {
		if omit[name] {
			continue
		}
		tags = append(tags, map[string]any{"name": name, "from": map[string]any{"kind": "DockerImage", "name": ref}})
	}
	is, _ := json.Marshal(map[string]any{
		"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
		"metadata": map[string]any{"name": "4.17.3"},
		"spec":     map[string]any{"tags": tags},
	})
	rel := repo(t, o.Host, o.ReleaseRepo)
	d := pushIndex(t, ctx, rel, archs, func(string) [][]byte {
		return [][]byte{tarGz(t, map[string][]byte{"release-manifests/image-references": is, "release-manifests/release-metadata": []byte(`{"version":"4.17.3"}`)})}
	})
	return &Release{Digest: d, Ref: refHost + "/" + o.ReleaseRepo + "@" + d, Images: images}
}

func repo(t testing.TB, host, name string) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	return r
}

// pushIndex pushes one image per architecture and an index over them.
func pushIndex(t testing.TB, ctx context.Context, r *remote.Repository, archs []string, layers func(arch string) [][]byte) string {
	t.Helper()
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for _, arch := range archs {
		goarch := map[string]string{"x86_64": "amd64", "aarch64": "arm64"}[arch]
		if goarch == "" {
			goarch = arch
		}
		cfg, _ := json.Marshal(map[string]any{"architecture": goarch, "os": "linux", "rootfs": map[string]any{"type": "layers"}})
		m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			Config: push(t, ctx, r, ocispec.MediaTypeImageConfig, cfg)}
		for _, l := range layers(arch) {
			m.Layers = append(m.Layers, push(t, ctx, r, ocispec.MediaTypeImageLayerGzip, l))
		}
		raw, _ := json.Marshal(m)
		desc := push(t, ctx, r, ocispec.MediaTypeImageManifest, raw)
		desc.Platform = &ocispec.Platform{OS: "linux", Architecture: goarch}
		idx.Manifests = append(idx.Manifests, desc)
	}
	raw, _ := json.Marshal(idx)
	return push(t, ctx, r, ocispec.MediaTypeImageIndex, raw).Digest.String()
}

func push(t testing.TB, ctx context.Context, r *remote.Repository, mediaType string, b []byte) ocispec.Descriptor {
	t.Helper()
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := r.Push(ctx, desc, bytes.NewReader(b)); err != nil {
		t.Fatalf("push %s: %v", mediaType, err)
	}
	return desc
}

func tarGz(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
