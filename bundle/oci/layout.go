package oci

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// layoutSource reads an OCI image layout from a directory or a tar of one. It
// does not verify what it reads (callers verify every blob against its
// descriptor), so a damaged blob reaches the caller's verifier and is reported
// as exactly that, rather than failing the open.
// hand-written: oras-go v2.7.0's content/oci ReadOnlyStore verifies every manifest when it opens, so a damaged manifest fails the open untyped instead of as the IntegrityError (exit code) the bundle verifier gives.
type layoutSource struct {
	ref  Reference
	open func(name string) (io.ReadCloser, error)
	fc   io.Closer // the archive file, when any
}

const maxIndexBytes = 4 << 20

func newLayoutDirSource(ref Reference) (*layoutSource, error) {
	fi, err := os.Stat(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("open OCI layout: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open OCI layout %s: not a directory (an archive is oci-archive:%s)", ref.Path, ref.Path)
	}
	root := ref.Path
	return &layoutSource{ref: ref, open: func(name string) (io.ReadCloser, error) {
		return os.Open(filepath.Join(root, filepath.FromSlash(name)))
	}}, nil
}

// newArchiveSource indexes the tar's regular files once (name -> offset,
// size) and then serves them as sections of the file: no extraction.
func newArchiveSource(ref Reference) (*layoutSource, error) {
	f, err := os.Open(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("open OCI archive: %w", err)
	}
	type span struct{ off, size int64 }
	entries := map[string]span{}
	cr := &offsetReader{r: f}
	tr := tar.NewReader(cr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open OCI archive %s: %w", ref.Path, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			entries[path.Clean(hdr.Name)] = span{off: cr.n, size: hdr.Size}
		}
	}
	return &layoutSource{ref: ref, fc: f, open: func(name string) (io.ReadCloser, error) {
		s, ok := entries[name]
		if !ok {
			return nil, fmt.Errorf("%s in %s: %w", name, ref.Path, fs.ErrNotExist)
		}
		return io.NopCloser(io.NewSectionReader(f, s.off, s.size)), nil
	}}, nil
}

// offsetReader counts bytes read; after tar.Reader.Next it is the offset of
// the entry's data (tar.Reader reads headers and padding exactly).
type offsetReader struct {
	r io.Reader
	n int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	o.n += int64(n)
	return n, err
}

func (s *layoutSource) Reference() Reference { return s.ref }

func (s *layoutSource) Close() error {
	if s.fc != nil {
		return s.fc.Close()
	}
	return nil
}

func (s *layoutSource) Fetch(_ context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("descriptor digest %q: %w", desc.Digest, err)
	}
	return s.open(path.Join(ocispec.ImageBlobsDir, desc.Digest.Algorithm().String(), desc.Digest.Encoded()))
}

// index reads index.json.
func (s *layoutSource) index() (*ocispec.Index, error) {
	rc, err := s.open(ocispec.ImageIndexFile)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.ref, ocispec.ImageIndexFile, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxIndexBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", s.ref, ocispec.ImageIndexFile, err)
	}
	if len(b) > maxIndexBytes {
		return nil, fmt.Errorf("%s: %s is over %d bytes", s.ref, ocispec.ImageIndexFile, maxIndexBytes)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.ref, ocispec.ImageIndexFile, err)
	}
	return &idx, nil
}

var errNotExist = fs.ErrNotExist

// Resolve finds the manifest tagged with the reference's tag in index.json
// (org.opencontainers.image.ref.name); without a tag, "latest" or the only
// one (signatures, which refer to a bundle, do not count).
func (s *layoutSource) Resolve(_ context.Context) (ocispec.Descriptor, error) {
	idx, err := s.index()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	want := s.ref.Tag
	if want == "" {
		want = defaultTag
	}
	var others []ocispec.Descriptor
	for _, m := range idx.Manifests {
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
	return ocispec.Descriptor{}, fmt.Errorf("%s: no manifest tagged %q in %s: %w", s.ref, want, ocispec.ImageIndexFile, fs.ErrNotExist)
}
