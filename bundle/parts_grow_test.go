package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// growRegistry is an oci.Writer and oci.Resumer that records how each part
// reached it: as a blob opened with a spool file before its first byte (an
// upload as it grows) or as a whole file (PushFile). Uploads of growing
// blobs end only when release is closed, so that slots stay taken.
type growRegistry struct {
	mu      sync.Mutex
	events  []string
	release chan struct{}
	failPut bool // Commit of a growing blob fails as an interrupted upload
}

func (g *growRegistry) log(format string, a ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, fmt.Sprintf(format, a...))
}

func (g *growRegistry) NewBlob(_ context.Context, mediaType string, opts oci.BlobOptions) (oci.BlobWriter, error) {
	if opts.SpoolFile == "" {
		return nil, errors.New("the test registry takes spooled blobs only")
	}
	f, err := os.OpenFile(opts.SpoolFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	g.log("grow %s", filepath.Base(opts.SpoolFile))
	return &growBlob{g: g, f: f, h: sha256.New(), mediaType: mediaType, opts: opts}, nil
}

func (g *growRegistry) PushBytes(context.Context, string, []byte) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, errors.New("not used")
}
func (g *growRegistry) PushManifest(context.Context, string, []byte) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, errors.New("not used")
}
func (g *growRegistry) Close() error { return nil }
func (g *growRegistry) Abort()       {}
func (g *growRegistry) Exists(context.Context, ocispec.Descriptor) (bool, error) {
	return false, nil
}

func (g *growRegistry) PushFile(_ context.Context, desc ocispec.Descriptor, path string, _ *oci.UploadSession, _ func(int64)) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if digest.FromBytes(b) != desc.Digest {
		return 0, fmt.Errorf("%s does not hold %s", path, desc.Digest)
	}
	g.log("file %s", filepath.Base(path))
	return int64(len(b)), nil
}

type growBlob struct {
	g         *growRegistry
	f         *os.File
	h         hash.Hash
	n         int64
	mediaType string
	opts      oci.BlobOptions
}

func (b *growBlob) Write(p []byte) (int, error) {
	b.h.Write(p)
	b.n += int64(len(p))
	return b.f.Write(p)
}

func (b *growBlob) Commit() (ocispec.Descriptor, error) {
	if err := b.f.Close(); err != nil {
		return ocispec.Descriptor{}, err
	}
	d := ocispec.Descriptor{MediaType: b.mediaType, Digest: digest.NewDigest(digest.SHA256, b.h), Size: b.n}
	b.opts.OnComplete(d)
	<-b.g.release
	if b.g.failPut {
		return d, &oci.UploadError{Session: &oci.UploadSession{Registry: "r", Repository: "x", Location: "http://r/upload/" + filepath.Base(b.f.Name())}, Err: errors.New("connection reset")}
	}
	return d, nil
}

func (b *growBlob) Abort() {
	b.f.Close()
	_ = os.Remove(b.f.Name())
}

func writeGrowingParts(t *testing.T, g *growRegistry, parts int, keep bool) (*partsWriter, []byte, string) {
	t.Helper()
	dir := t.TempDir()
	file := func(i int) string { return filepath.Join(dir, fmt.Sprintf("part%02d.blob", i+1)) }
	pw, err := newPartsWriter(context.Background(), g, LayerFiles.MediaType(false), nil, MinPartSize, file, keep, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("0123456789abcdef"), int(MinPartSize)*parts/16-1000)
	if _, err := pw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return pw, plain, dir
}

// TestParts_UploadWhileGrowing: with every upload slot free, a part's upload
// is opened before its first byte is written (it goes up as it grows); with
// the slots taken by uploads that have not ended, the next parts go to
// their files and are uploaded whole once a slot frees. The descriptors are
// known as soon as each part is whole, before its upload ends (the spool's
// record is written then), and they are those of the part files.
func TestParts_UploadWhileGrowing(t *testing.T) {
	g := &growRegistry{release: make(chan struct{})}
	parts := partUploads + 2
	pw, _, dir := writeGrowingParts(t, g, parts, true)
	// Every part is whole; partUploads uploads hold their slots.
	recs := pw.records()
	if len(recs) != parts {
		t.Fatalf("%d parts recorded, want %d", len(recs), parts)
	}
	for i, r := range recs {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("part%02d.blob", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Descriptor.Digest != digest.FromBytes(b) || r.Descriptor.Size != int64(len(b)) {
			t.Errorf("part %d: recorded %s (%d bytes) before its upload ended, the file is %s (%d bytes)", i+1, r.Descriptor.Digest, r.Descriptor.Size, digest.FromBytes(b), len(b))
		}
	}
	g.mu.Lock()
	early := append([]string(nil), g.events...)
	g.mu.Unlock()
	var want []string
	for i := range partUploads {
		want = append(want, fmt.Sprintf("grow part%02d.blob", i+1))
	}
	if fmt.Sprint(early) != fmt.Sprint(want) {
		t.Fatalf("before any upload ended the registry saw %q, want %q", early, want)
	}
	close(g.release)
	if err := pw.wait(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := partUploads; i < parts; i++ {
		found := false
		for _, e := range g.events {
			found = found || e == fmt.Sprintf("file part%02d.blob", i+1)
		}
		if !found {
			t.Errorf("part %d was never uploaded from its file: %q", i+1, g.events)
		}
	}
}

// TestParts_GrowingUploadFailureKeepsTheSession: a part uploaded as it grew
// whose upload fails is recorded with the session a rerun resumes, and the
// file stays in the spool.
func TestParts_GrowingUploadFailureKeepsTheSession(t *testing.T) {
	g := &growRegistry{release: make(chan struct{}), failPut: true}
	close(g.release)
	pw, _, dir := writeGrowingParts(t, g, 2, true)
	err := pw.wait()
	var ue *oci.UploadError
	if !errors.As(err, &ue) {
		t.Fatalf("wait: %v, want the upload's *oci.UploadError", err)
	}
	for i, r := range pw.records() {
		if r.Session == nil || r.Session.Location != "http://r/upload/"+fmt.Sprintf("part%02d.blob", i+1) {
			t.Errorf("part %d: session %+v, want the failed upload's", i+1, r.Session)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("part%02d.blob", i+1))); err != nil {
			t.Errorf("part %d: the spool lost its file: %v", i+1, err)
		}
	}
}
