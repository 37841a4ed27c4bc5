// Package selfimage turns the running kubectl-assisted binary into a
// container image and stores it beside a bundle, as an OCI 1.1 referrer of
// the bundle's manifest, so that the restore Job on cluster 0 runs exactly
// the kubectl-assisted that made the bundle, pulled from the registry that
// already holds the bundle, with the same credentials, and no image has to
// be built or mirrored by hand.
//
// The image has one layer and no base image: the binary (statically linked,
// of the running machine's OS and architecture) at /usr/local/bin, the
// machine's CA bundle at the path the binary reads it from (so the Job
// trusts what node 0 trusted: the agent-based installer adds the mirror
// registry's CA there), and a world-writable /tmp. It runs as UID 1001, any
// UID works. Built twice from the same binary and CA bundle it is the same
// image: rerunning migrate pushes nothing new.
package selfimage

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// ArtifactType marks a restore image among a bundle's referrers.
const ArtifactType = "application/vnd.kubectl-assisted.restore-image.v1"

// BinaryPath is where the image holds kubectl-assisted (on PATH).
const BinaryPath = "/usr/local/bin/kubectl-assisted"

// User is the image's numeric non-root user (PSA restricted: runAsNonRoot).
const User = "1001"

// Annotations of the image manifest.
const (
	AnnotationVersion  = "io.kubectl-assisted.version"
	AnnotationPlatform = "io.kubectl-assisted.platform"
	AnnotationBundle   = "io.kubectl-assisted.bundle-digest"
)

// caFiles are where Go's crypto/x509 looks for the system's CA bundle on
// Linux (crypto/x509/root_linux.go), in its order: the first that exists
// here is copied to the same path in the image.
var caFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// Options say what goes into the image.
type Options struct {
	// Executable is the binary; empty: the running one (os.Executable).
	Executable string
	// Version is recorded as an annotation.
	Version string
	// CAFile is the CA bundle to include; empty: the machine's (caFiles);
	// "-": none.
	CAFile string
	// TempDir holds the compressed layer while it is pushed.
	TempDir string
}

// Image is a restore image stored beside a bundle.
type Image struct {
	// Ref is REGISTRY/REPOSITORY@DIGEST, what the Job runs.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// Platform is OS/ARCH.
	Platform string `json:"platform"`
	Version  string `json:"version,omitempty"`
	// Size is the compressed layer's size.
	Size int64 `json:"size"`
	// Pushed is false when the registry held every blob already.
	Pushed bool `json:"pushed"`
}

// Tag is the tag a bundle's restore image is stored under, beside cosign's
// signature tag (sha256-<hex>.sig): a registry that collects untagged
// manifests keeps it, and only a user removes it.
func Tag(subject digest.Digest) string {
	return "sha256-" + subject.Encoded() + ".restore-image"
}

// Push builds the image and stores it in the repository of ref (a
// registry) as a referrer of the bundle manifest subject. Blobs the registry
// has are not uploaded again.
func Push(ctx context.Context, ref oci.Reference, reg oci.RegistryOptions, subject ocispec.Descriptor, o Options) (*Image, error) {
	if !ref.Remote() {
		return nil, fmt.Errorf("a restore image can only be stored in a registry, not %s", ref)
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("this kubectl-assisted is built for %s/%s: cluster 0 cannot run it; give --restore-image", runtime.GOOS, runtime.GOARCH)
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the running binary: %w", err)
		}
	}
	if err := checkStatic(exe); err != nil {
		return nil, err
	}
	layer, err := writeLayer(exe, o.CAFile, o.TempDir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(layer.path)

	// The writer wants a tag; the image's own is where it is pushed.
	tagged := ref
	tagged.Tag, tagged.Digest = Tag(subject.Digest), ""
	w, err := oci.NewWriter(ctx, tagged, reg)
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	up, ok := w.(interface {
		oci.Resumer
		oci.ReferrerWriter
	})
	if !ok {
		return nil, fmt.Errorf("%s cannot store an image", ref)
	}
	img := &Image{Platform: runtime.GOOS + "/" + runtime.GOARCH, Version: o.Version, Size: layer.desc.Size}
	has, err := up.Exists(ctx, layer.desc)
	if err != nil {
		return nil, fmt.Errorf("restore image: %w", err)
	}
	if !has {
		if _, err := up.PushFile(ctx, layer.desc, layer.path, nil, nil); err != nil {
			return nil, fmt.Errorf("push the restore image's layer: %w", err)
		}
		img.Pushed = true
	}
	now := time.Unix(0, 0).UTC()
	config, err := json.Marshal(ocispec.Image{
		Created:  &now,
		Platform: ocispec.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH},
		Config: ocispec.ImageConfig{
			User:       User,
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			Entrypoint: []string{BinaryPath},
			Labels:     map[string]string{AnnotationVersion: o.Version},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layer.diffID}},
	})
	if err != nil {
		return nil, err
	}
	cdesc, err := w.PushBytes(ctx, ocispec.MediaTypeImageConfig, config)
	if err != nil {
		return nil, fmt.Errorf("push the restore image's config: %w", err)
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cdesc,
		Layers:       []ocispec.Descriptor{layer.desc},
		Subject:      &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:  map[string]string{AnnotationVersion: o.Version, AnnotationPlatform: img.Platform, AnnotationBundle: subject.Digest.String()},
	})
	if err != nil {
		return nil, err
	}
	mdesc := oci.ReferrerDescriptor(manifest, ArtifactType)
	if err := up.PushReferrer(ctx, mdesc, manifest, Tag(subject.Digest)); err != nil {
		return nil, fmt.Errorf("push the restore image: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	img.Digest = mdesc.Digest.String()
	img.Ref = ref.Registry + "/" + ref.Repository + "@" + img.Digest
	return img, nil
}

// checkStatic refuses a binary that needs a dynamic loader: the image has
// no C library to load (a build with cgo; releases are built without).
func checkStatic(exe string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("the running binary %s is not an ELF executable cluster 0 can run: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the running binary %s is dynamically linked (built with cgo): the restore image has no C library; use a release build (CGO_ENABLED=0) or give --restore-image", exe)
		}
	}
	return nil
}

type layerFile struct {
	path   string
	desc   ocispec.Descriptor
	diffID digest.Digest
}

// writeLayer writes the gzip-compressed layer to a temporary file, hashing
// the tar (the diff ID) and the compressed bytes (the blob) on the way.
func writeLayer(exe, caFile, tempDir string) (*layerFile, error) {
	bin, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read the running binary: %w", err)
	}
	defer bin.Close()
	st, err := bin.Stat()
	if err != nil {
		return nil, err
	}
	var ca []byte
	caPath := ""
	switch caFile {
	case "-":
	case "":
		for _, f := range caFiles {
			if b, err := os.ReadFile(f); err == nil {
				ca, caPath = b, f
				break
			}
		}
	default:
		if ca, err = os.ReadFile(caFile); err != nil {
			return nil, fmt.Errorf("CA bundle for the restore image: %w", err)
		}
		caPath = caFiles[0]
	}

	f, err := os.CreateTemp(tempDir, "kubectl-assisted-image-*.tar.gz")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	blobHash := sha256.New()
	counter := &countWriter{w: io.MultiWriter(f, blobHash)}
	zw, err := gzip.NewWriterLevel(counter, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tarHash := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, tarHash))
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	dirs := []string{"etc/", "tmp/", "usr/", "usr/local/", "usr/local/bin/"}
	if caPath != "" {
		for d := ""; ; {
			rest := strings.TrimPrefix(caPath, "/"+d)
			i := strings.IndexByte(rest, '/')
			if i < 0 {
				break
			}
			d += rest[:i+1]
			dirs = append(dirs, d)
		}
	}
	// Parents sort before their children ("a/" < "a/b/").
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := dir(d, mode); err != nil {
			return nil, err
		}
	}
	if caPath != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(caPath, "/"), Mode: 0o644, Size: int64(len(ca)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(ca); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(BinaryPath, "/"), Mode: 0o755, Size: st.Size(), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if n, err := io.Copy(tw, bin); err != nil {
		return nil, fmt.Errorf("read the running binary: %w", err)
	} else if n != st.Size() {
		return nil, errors.New("the running binary changed while it was read")
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	ok = true
	return &layerFile{
		path:   f.Name(),
		desc:   ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(blobHash.Sum(nil))), Size: counter.n},
		diffID: digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(tarHash.Sum(nil))),
	}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// List returns the restore images stored as referrers of the bundle
// manifest subject (at most oci.MaxReferrers).
func List(ctx context.Context, src oci.ReferrerSource, subject ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	return src.Referrers(ctx, subject, ArtifactType)
}
