package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	bregistry "github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
)

// Docker media types that OpenShift payloads still use.
const (
	dockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	dockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	maxManifest        = 4 << 20
)

// ErrFileNotFound is returned when no layer of an image holds the file.
var ErrFileNotFound = errors.New("file not found in image")

// image is a resolved single-platform image.
type image struct {
	ref    string // the reference that worked (a mirror or the source)
	repo   *remote.Repository
	layers []ocispec.Descriptor
}

// resolve fetches the manifest of ref (trying mirrors first), picking the
// linux/goarch entry of an index.
func (c *Client) resolve(ctx context.Context, ref, goarch string) (*image, error) {
	var errs []error
	for _, cand := range Candidates(ref, c.opts.Mirrors) {
		img, err := c.resolveOne(ctx, cand, goarch)
		if err == nil {
			return img, nil
		}
		err = bregistry.Redact(err)
		if cand != ref {
			c.Log("mirror %s: %v", cand, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", cand, err))
	}
	return nil, errors.Join(errs...)
}

func (c *Client) resolveOne(ctx context.Context, ref, goarch string) (*image, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid image reference: %w", err)
	}
	repo, err := c.repository(r)
	if err != nil {
		return nil, err
	}
	desc, raw, err := fetchManifest(ctx, repo, r.Reference)
	if err != nil {
		return nil, err
	}
	if desc.MediaType == ocispec.MediaTypeImageIndex || desc.MediaType == dockerManifestList {
		var idx ocispec.Index
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, fmt.Errorf("image index: %w", err)
		}
		var found *ocispec.Descriptor
		var have []string
		for i, m := range idx.Manifests {
			if m.Platform == nil {
				continue
			}
			have = append(have, m.Platform.OS+"/"+m.Platform.Architecture)
			if m.Platform.OS == "linux" && m.Platform.Architecture == goarch {
				found = &idx.Manifests[i]
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("no linux/%s image in the index (has %s)", goarch, strings.Join(have, ", "))
		}
		desc, raw, err = fetchManifest(ctx, repo, found.Digest.String())
		if err != nil {
			return nil, err
		}
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest && desc.MediaType != dockerManifest {
		return nil, fmt.Errorf("unsupported manifest media type %q", desc.MediaType)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("image manifest: %w", err)
	}
	return &image{ref: ref, repo: repo, layers: m.Layers}, nil
}

func fetchManifest(ctx context.Context, repo *remote.Repository, reference string) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return desc, nil, err
	}
	defer rc.Close()
	if desc.Size > maxManifest {
		return desc, nil, fmt.Errorf("manifest of %d bytes is too large", desc.Size)
	}
	raw, err := content.ReadAll(rc, desc)
	return desc, raw, err
}

// openFile streams file p (absolute, "/coreos/x.iso") out of the image, looking
// at layers from the top down. The caller reads it to EOF and closes; the layer's
// digest is verified when the returned reader hits EOF (the rest of the layer is
// drained for that).
func (img *image) openFile(ctx context.Context, p string) (io.ReadCloser, int64, error) {
	want := strings.TrimPrefix(path.Clean("/"+p), "/")
	for i := len(img.layers) - 1; i >= 0; i-- {
		l := img.layers[i]
		rc, err := img.repo.Blobs().Fetch(ctx, l)
		if err != nil {
			return nil, 0, fmt.Errorf("fetch layer %s: %w", l.Digest, bregistry.Redact(err))
		}
		verifier := l.Digest.Verifier()
		// The tar reader reads the layer through the verifier; fileReader drains
		// the rest of it the same way, so the digest covers every byte.
		layer := io.TeeReader(rc, verifier)
		tr, closeDecomp, err := tarReader(layer)
		if err != nil {
			rc.Close()
			return nil, 0, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				closeDecomp()
				rc.Close()
				return nil, 0, fmt.Errorf("layer %s: %w", l.Digest, err)
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			if name == want && h.Typeflag == tar.TypeReg {
				return &fileReader{tr: tr, rest: layer, verifier: verifier, layer: l, closers: []func() error{closeDecomp, rc.Close}}, h.Size, nil
			}
		}
		closeDecomp()
		rc.Close()
	}
	return nil, 0, fmt.Errorf("%s: %w", p, ErrFileNotFound)
}

// tarReader detects gzip by its magic bytes (media types lie in old payloads).
func tarReader(r io.Reader) (*tar.Reader, func() error, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, nil, err
	}
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return tar.NewReader(zr), zr.Close, nil
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, nil, errors.New("zstd-compressed layers are not supported")
	}
	return tar.NewReader(br), func() error { return nil }, nil
}

// fileReader reads one tar entry, and at its end drains the layer so that the
// layer digest can be checked.
type fileReader struct {
	tr       *tar.Reader
	rest     io.Reader
	verifier digest.Verifier
	layer    ocispec.Descriptor
	closers  []func() error
	done     bool
}

func (f *fileReader) Read(p []byte) (int, error) {
	n, err := f.tr.Read(p)
	if err == io.EOF && !f.done {
		f.done = true
		if _, derr := io.Copy(io.Discard, f.rest); derr != nil {
			return n, fmt.Errorf("layer %s: %w", f.layer.Digest, derr)
		}
		if !f.verifier.Verified() {
			return n, fmt.Errorf("layer %s: content does not match its digest", f.layer.Digest)
		}
	}
	return n, err
}

func (f *fileReader) Close() error {
	var errs []error
	for _, c := range f.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
