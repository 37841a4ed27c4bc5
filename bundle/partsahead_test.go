package bundle

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// watchedSource records the blobs fetched from a source and whether each
// fetched stream was closed.
type watchedSource struct {
	oci.Source
	mu      sync.Mutex
	fetched []digest.Digest
	open    map[*watchedBlob]digest.Digest
}

type watchedBlob struct {
	io.ReadCloser
	s *watchedSource
}

func (b *watchedBlob) Close() error {
	b.s.mu.Lock()
	delete(b.s.open, b)
	b.s.mu.Unlock()
	return b.ReadCloser.Close()
}

func (s *watchedSource) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.Source.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetched = append(s.fetched, desc.Digest)
	b := &watchedBlob{ReadCloser: rc, s: s}
	s.open[b] = desc.Digest
	return b, nil
}

func (s *watchedSource) wasFetched(d digest.Digest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.fetched {
		if f == d {
			return true
		}
	}
	return false
}

func (s *watchedSource) stillOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// partsBundle creates an encrypted bundle whose files layer is in 1 MiB
// parts, applies edit to its layout, and opens it through a watchedSource.
func partsBundle(t *testing.T, edit func(dir string, parts []ocispec.Descriptor)) (*Bundle, *watchedSource, []ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	id := newIdentity(t)
	data, _, _ := partsData(t)
	dir := filepath.Join(t.TempDir(), "layout")
	create(t, "oci:"+dir, CreateOptions{Database: fakeDB{data: "row\n"}, Files: &FilesOptions{Dir: data}, Recipients: []age.Recipient{id.Recipient()}, PartSize: MinPartSize})
	m, _ := layoutManifest(t, dir)
	parts := filesParts(m)
	if len(parts) < 4 {
		t.Fatalf("%d parts, want at least 4", len(parts))
	}
	if edit != nil {
		edit(dir, parts)
	}
	ref, err := oci.ParseReference("oci:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := oci.NewSource(ctx, ref, oci.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws := &watchedSource{Source: src, open: map[*watchedBlob]digest.Digest{}}
	b, err := OpenSource(ctx, ws, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, ws, parts
}

// TestParts_NextPartIsOpenedAhead: once a part's blob was read to its end,
// the next part's blob is fetched while the reader still holds the first
// part's bytes: a reader that has taken one byte of part 1 (of 1 MiB, which
// the fetch stage reads whole) sees part 2 fetched without reading on.
func TestParts_NextPartIsOpenedAhead(t *testing.T) {
	b, ws, parts := partsBundle(t, nil)
	rc, err := b.OpenLayer(context.Background(), LayerFiles)
	if err != nil {
		t.Fatal(err)
	}
	var one [1]byte
	if _, err := io.ReadFull(rc, one[:]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ws.wasFetched(parts[1].Digest) {
		if time.Now().After(deadline) {
			t.Fatal("part 2 was not fetched ahead of the reader, which holds part 1")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ws.wasFetched(parts[2].Digest) {
		t.Fatal("part 3 was fetched while the reader is still in part 1: only one part is opened ahead")
	}
	// Close ends the part opened ahead too: every fetched blob is closed.
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ws.stillOpen(); n != 0 {
		t.Fatalf("%d fetched blobs still open after Close", n)
	}
}

// TestParts_ErrorOfAPartOpenedAheadComesAfterThePartBefore: the blob of
// part 3 is missing; part 3 is opened ahead while part 2 is read, yet its
// error is returned only after every byte of parts 1 and 2 (a MiB each).
func TestParts_ErrorOfAPartOpenedAheadComesAfterThePartBefore(t *testing.T) {
	b, ws, parts := partsBundle(t, func(dir string, parts []ocispec.Descriptor) {
		if err := os.Remove(filepath.Join(dir, "blobs", "sha256", parts[2].Digest.Encoded())); err != nil {
			t.Fatal(err)
		}
	})
	rc, err := b.OpenLayer(context.Background(), LayerFiles)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	var mb *MissingBlobError
	if !errors.As(err, &mb) || mb.Digest != parts[2].Digest.String() {
		t.Fatalf("read %d bytes, then %T %v; want a *MissingBlobError of part 3 (%s)", n, err, err, parts[2].Digest)
	}
	if n != 2*MinPartSize {
		t.Fatalf("read %d bytes before the error, want parts 1 and 2 whole (%d)", n, 2*MinPartSize)
	}
	rc.Close()
	if n := ws.stillOpen(); n != 0 {
		t.Fatalf("%d fetched blobs still open after Close", n)
	}
}
