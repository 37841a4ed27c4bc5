package oci

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// blobServer serves blobs by digest the way distribution does (Go's
// http.ServeContent: 206 for a Range), with hooks to misbehave.
type blobServer struct {
	blobs map[string][]byte
	// serve, when set, answers instead of ServeContent; it returns false to
	// let ServeContent answer.
	serve func(w http.ResponseWriter, r *http.Request, blob []byte) bool

	mu       sync.Mutex
	requests []string // the Range of each request, "" for none
	inFlight int
	maxIn    int
}

func newBlobServer(t *testing.T, blobs ...[]byte) (*blobServer, *httptest.Server, []ocispec.Descriptor) {
	t.Helper()
	s := &blobServer{blobs: map[string][]byte{}}
	var descs []ocispec.Descriptor
	for _, b := range blobs {
		d := digest.FromBytes(b)
		s.blobs[d.String()] = b
		descs = append(descs, ocispec.Descriptor{MediaType: "application/octet-stream", Digest: d, Size: int64(len(b))})
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv, descs
}

func (s *blobServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Header.Get("Range"))
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	i := strings.LastIndex(r.URL.Path, "/blobs/")
	blob, ok := s.blobs[r.URL.Path[i+len("/blobs/"):]]
	if i < 0 || !strings.HasPrefix(r.URL.Path, "/v2/bundles/b/") || !ok {
		http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
		return
	}
	if s.serve != nil && s.serve(w, r, blob) {
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(blob))
}

func (s *blobServer) ranges() (withRange, without int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r != "" {
			withRange++
		} else {
			without++
		}
	}
	return withRange, without
}

func testSource(srv *httptest.Server) *registrySource {
	host := strings.TrimPrefix(srv.URL, "http://")
	return &registrySource{repo: &remote.Repository{
		Client:    srv.Client(),
		Reference: registry.Reference{Registry: host, Repository: "bundles/b"},
		PlainHTTP: true,
	}}
}

// smallRanges makes the chunks small, so that a few KiB of blobs are many
// chunks, for the test's duration.
func smallRanges(t *testing.T, chunk int64, streams int) {
	t.Helper()
	oc, os, ow, om, op, of := rangeChunk, rangeStreams, rangeWindow, rangeMin, probeBytes, fastStream
	// slowWhole's 250 kB/s is slow, loopback's tens of MB/s (a probe of a
	// few KiB) fast.
	rangeChunk, rangeStreams, rangeWindow, rangeMin, probeBytes, fastStream = chunk, streams, streams+1, 2*chunk, 5*chunk, 1e6
	t.Cleanup(func() {
		rangeChunk, rangeStreams, rangeWindow, rangeMin, probeBytes, fastStream = oc, os, ow, om, op, of
	})
}

func randomBlob(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// readSame reads every blob of the sequence and fails t unless each is the
// one served.
func readSame(t *testing.T, seq Sequence, blobs [][]byte) {
	t.Helper()
	got, err := readAll(seq, len(blobs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range blobs {
		if !bytes.Equal(got[i], blobs[i]) {
			t.Fatalf("blob %d: %d bytes differ from the %d served", i, len(got[i]), len(blobs[i]))
		}
	}
}

// readAll reads every blob of the sequence in order.
func readAll(seq Sequence, n int) ([][]byte, error) {
	var got [][]byte
	for range n {
		rc, err := seq.Next()
		if err != nil {
			return got, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return got, err
		}
		got = append(got, b)
	}
	return got, nil
}

func TestRangedSequence_RangesInOrder(t *testing.T) {
	smallRanges(t, 1000, 3)
	// Sizes off the chunk size, an empty blob first and in the middle.
	blobs := [][]byte{{}, randomBlob(t, 2500), randomBlob(t, 1000), {}, randomBlob(t, 7), randomBlob(t, 4001)}
	s, srv, descs := newBlobServer(t, blobs...)
	seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
	got, err := readAll(seq, len(blobs))
	if err != nil {
		t.Fatal(err)
	}
	seq.Close()
	for i := range blobs {
		if !bytes.Equal(got[i], blobs[i]) {
			t.Fatalf("blob %d: %d bytes differ from the %d served", i, len(got[i]), len(blobs[i]))
		}
	}
	// 3 + 1 + 1 + 5 chunks, each one GET with a Range, and no other GET.
	if with, without := s.ranges(); with != 10 || without != 0 {
		t.Fatalf("%d GETs with a Range and %d without, want 10 and 0: %q", with, without, s.requests)
	}
	if s.maxIn > 3 {
		t.Fatalf("%d GETs at once, want at most 3", s.maxIn)
	}
}

// A reader that stops reading stops the fetches: at most rangeWindow chunks
// are asked for ahead of it.
func TestRangedSequence_WindowBoundsWhatIsFetched(t *testing.T) {
	smallRanges(t, 1000, 2)
	blob := randomBlob(t, 20000)
	s, srv, descs := newBlobServer(t, blob)
	seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
	defer seq.Close()
	rc, err := seq.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 1500)); err != nil { // the first chunk and half the second
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	// Chunk 0 was given back: chunks 1, 2 and 3 hold the window's 3 buffers.
	if with, _ := s.ranges(); with > 4 {
		t.Fatalf("%d ranges asked while the reader held at chunk 1, want at most 4 (window of 3 after chunk 0)", with)
	}
	rest, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(append(blob[:1500:1500], rest...), blob) {
		t.Fatalf("the rest: %d bytes, %v", len(rest), err)
	}
}

// A registry that ignores Range (200, the whole blob) is read one whole GET
// per blob, the first answer serving the first blob.
func TestRangedSequence_RegistryWithoutRanges(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 3000), randomBlob(t, 10), randomBlob(t, 2000)}
	s, srv, descs := newBlobServer(t, blobs...)
	s.serve = func(w http.ResponseWriter, r *http.Request, blob []byte) bool {
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		_, _ = w.Write(blob)
		return true
	}
	seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
	defer seq.Close()
	readSame(t, seq, blobs)
	if with, without := s.ranges(); with != 1 || without != 2 {
		t.Fatalf("%d GETs with a Range and %d without, want 1 (the first) and 2", with, without)
	}
}

// A stream that breaks within a chunk is asked again for the rest of it.
func TestRangedSequence_BrokenStreamAskedAgain(t *testing.T) {
	smallRanges(t, 1000, 2)
	blob := randomBlob(t, 5000)
	s, srv, descs := newBlobServer(t, blob)
	var broke atomic.Int32
	s.serve = func(w http.ResponseWriter, r *http.Request, b []byte) bool {
		if r.Header.Get("Range") != "bytes=2000-2999" || broke.Add(1) > 1 {
			return false
		}
		// Promise the chunk, send 300 bytes of it, and drop the connection.
		w.Header().Set("Content-Range", fmt.Sprintf("bytes 2000-2999/%d", len(b)))
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusPartialContent)
		_, _ = w.Write(b[2000:2300])
		w.(http.Flusher).Flush()
		dropConnection(w)
		return true
	}
	seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
	defer seq.Close()
	got, err := readAll(seq, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0], blob) {
		t.Fatal("the blob differs after a broken stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var again bool
	for _, r := range s.requests {
		again = again || r == "bytes=2300-2999"
	}
	if !again {
		t.Fatalf("the rest of the broken chunk was not asked for: %q", s.requests)
	}
}

// Failures reach the reader as errors, at the chunk where they happened.
func TestRangedSequence_Failures(t *testing.T) {
	blob := randomBlob(t, 5000)
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request, b []byte) bool
		want  string
		found bool // the error is a not-found
	}{{
		name: "stream always breaks",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			if r.Header.Get("Range") == "bytes=0-999" {
				return false
			}
			var from, to int
			_, _ = fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &from, &to)
			w.Header().Set("Content-Length", fmt.Sprint(to-from+1))
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(b)))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(b[:10])
			return true
		},
		want: "the stream broke",
	}, {
		name: "another range than asked",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			if r.Header.Get("Range") == "bytes=0-999" {
				return false
			}
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-999/%d", len(b)))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(b[:1000])
			return true
		},
		want: "with Content-Range",
	}, {
		name: "another size than the descriptor's",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(append(b, 0)))
			return true
		},
		want: "with Content-Range",
	}, {
		name: "the whole blob where a later range was asked",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			if r.Header.Get("Range") == "bytes=0-999" {
				return false
			}
			_, _ = w.Write(b)
			return true
		},
		want: "answered a range with 200",
	}, {
		name: "server error",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			http.Error(w, `{"errors":[{"code":"DENIED"}]}`, http.StatusForbidden)
			return true
		},
		want: "403 Forbidden",
	}, {
		name: "gone",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte) bool {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return true
		},
		want:  "not found",
		found: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			smallRanges(t, 1000, 2)
			s, srv, descs := newBlobServer(t, blob)
			s.serve = tc.serve
			seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
			defer seq.Close()
			_, err := readAll(seq, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if IsNotFound(err) != tc.found {
				t.Fatalf("IsNotFound(%v) = %v, want %v", err, !tc.found, tc.found)
			}
		})
	}
}

// Cancelling the context ends a reader waiting for a chunk, and Close
// returns once the fetches stopped.
func TestRangedSequence_CancelEndsWaits(t *testing.T) {
	smallRanges(t, 1000, 2)
	blob := randomBlob(t, 5000)
	s, srv, descs := newBlobServer(t, blob)
	stall := make(chan struct{})
	s.serve = func(w http.ResponseWriter, r *http.Request, b []byte) bool {
		if r.Header.Get("Range") == "bytes=0-999" {
			return false
		}
		select {
		case <-stall:
		case <-r.Context().Done():
		}
		return false
	}
	defer close(stall)
	ctx, cancel := context.WithCancel(context.Background())
	seq := newRangedSequence(ctx, testSource(srv).repo, descs, 0, 0)
	_, done := readWaiting(t, seq)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("read after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader still waits 10 s after the cancel")
	}
	closed := make(chan struct{})
	go func() { seq.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits 10 s after the cancel")
	}
}

// Small sequences, and sources other than a registry, fetch each blob whole.
func TestFetchSequence_SmallIsPlain(t *testing.T) {
	smallRanges(t, 1000, 2)
	blobs := [][]byte{randomBlob(t, 900), randomBlob(t, 1000)}
	s, srv, descs := newBlobServer(t, blobs...)
	src := &countingSource{Source: testSource(srv)}
	seq := FetchSequence(context.Background(), src, descs)
	got, err := readAll(seq, 2)
	if err != nil || !bytes.Equal(got[0], blobs[0]) || !bytes.Equal(got[1], blobs[1]) {
		t.Fatalf("%v", err)
	}
	if with, _ := s.ranges(); with != 0 || src.n != 2 {
		t.Fatalf("%d ranges, %d Fetch calls; want 0 and 2", with, src.n)
	}
	seq = FetchSequence(context.Background(), testSource(srv), descs)
	if _, ok := seq.(*plainSequence); !ok {
		t.Fatalf("1900 bytes from a registry: %T, want a plain sequence below %d bytes", seq, rangeMin)
	}
}

type countingSource struct {
	Source
	n int
}

func (c *countingSource) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	c.n++
	return c.Source.Fetch(ctx, d)
}

// slowWhole answers a GET without a Range with the whole blob, slowly (500
// bytes every 2 ms); withRanges tells whether a Range is served (fast) or
// ignored (the whole blob, slowly).
func slowWhole(withRanges bool) func(w http.ResponseWriter, r *http.Request, b []byte) bool {
	return slowAfter(0, withRanges)
}

// slowAfter is slowWhole with the first fast bytes of each whole GET sent at once.
func slowAfter(fast int, withRanges bool) func(w http.ResponseWriter, r *http.Request, b []byte) bool {
	return func(w http.ResponseWriter, r *http.Request, b []byte) bool {
		if withRanges && r.Header.Get("Range") != "" {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		fast = min(fast, len(b))
		if _, err := w.Write(b[:fast]); err != nil {
			return true
		}
		for off := fast; off < len(b); off += 500 {
			if _, err := w.Write(b[off:min(off+500, len(b))]); err != nil {
				return true
			}
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
		return true
	}
}

// A slow stream the reader waits for gives way to ranges, from where the
// reader is in the blob; the blobs after it are ranges only.
func TestFetchSequence_SlowStreamTurnsToRanges(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 20000), randomBlob(t, 9000)}
	s, srv, descs := newBlobServer(t, blobs...)
	s.serve = slowWhole(true)
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	readSame(t, seq, blobs)
	s.mu.Lock()
	defer s.mu.Unlock()
	// One whole GET (the first blob's, abandoned after the probe), then
	// ranges: the first from the probe's end or later, none before it.
	if len(s.requests) < 2 || s.requests[0] != "" {
		t.Fatalf("requests %q: want the first blob's whole GET first", s.requests)
	}
	var from, to int
	if _, err := fmt.Sscanf(s.requests[1], "bytes=%d-%d", &from, &to); err != nil || from < 5000 {
		t.Fatalf("requests %q: want ranges after the whole GET, from 5000 bytes (the probe) on", s.requests)
	}
	for _, r := range s.requests[2:] {
		if r == "" {
			t.Fatalf("requests %q: a whole GET after the turn to ranges", s.requests)
		}
	}
}

// The same against a registry that ignores ranges: the turn finds it out on
// its first range and reads each blob whole, skipping what was read.
func TestFetchSequence_SlowStreamWithoutRanges(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 12000), randomBlob(t, 3000)}
	s, srv, descs := newBlobServer(t, blobs...)
	s.serve = slowWhole(false)
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	readSame(t, seq, blobs)
	if with, without := s.ranges(); with != 1 || without != 2 {
		t.Fatalf("%d GETs with a Range and %d without, want 1 (the turn's probe) and 2: %q", with, without, s.requests)
	}
}

// A fast stream stays one GET per blob.
func TestFetchSequence_FastStreamStaysWhole(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 20000), randomBlob(t, 9000)}
	s, srv, descs := newBlobServer(t, blobs...)
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	got, err := readAll(seq, len(blobs))
	if err != nil || !bytes.Equal(got[0], blobs[0]) || !bytes.Equal(got[1], blobs[1]) {
		t.Fatalf("%v", err)
	}
	if with, without := s.ranges(); with != 0 || without != 2 {
		t.Fatalf("%d GETs with a Range and %d without, want 0 and 2: %q", with, without, s.requests)
	}
}

// A stream fast at first and slow later turns to ranges later: each
// probeBytes are judged on their own.
func TestFetchSequence_TurnsWhenTheStreamSlowsDown(t *testing.T) {
	smallRanges(t, 1000, 3)
	blob := randomBlob(t, 40000)
	s, srv, descs := newBlobServer(t, blob)
	s.serve = slowAfter(20000, true)
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	got, err := readAll(seq, 1)
	if err != nil || !bytes.Equal(got[0], blob) {
		t.Fatalf("%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var from, to int
	if len(s.requests) < 2 || s.requests[0] != "" {
		t.Fatalf("requests %q: want the whole GET first", s.requests)
	}
	if _, err := fmt.Sscanf(s.requests[1], "bytes=%d-%d", &from, &to); err != nil || from < 20000 {
		t.Fatalf("requests %q: want ranges only once the stream slowed down (from 20000 bytes on)", s.requests)
	}
}

// Closing a blob before its end ends a Read waiting in another goroutine,
// as closing an HTTP body does: the layer's reader stops its fetch goroutine
// this way. Both while the blob is on its one GET and once in ranges.
func TestFetchSequence_CloseEndsAWaitingRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		// serve answers the first 1000 bytes, then stalls
		serve func(w http.ResponseWriter, r *http.Request, b []byte, stall <-chan struct{}) bool
		open  func(src *registrySource, descs []ocispec.Descriptor) Sequence
	}{{
		name: "ranges",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte, stall <-chan struct{}) bool {
			if r.Header.Get("Range") != "bytes=0-999" {
				select {
				case <-stall:
				case <-r.Context().Done():
				}
			}
			return false
		},
		open: func(src *registrySource, descs []ocispec.Descriptor) Sequence {
			return newRangedSequence(context.Background(), src.repo, descs, 0, 0)
		},
	}, {
		name: "one GET",
		serve: func(w http.ResponseWriter, r *http.Request, b []byte, stall <-chan struct{}) bool {
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			_, _ = w.Write(b[:1000])
			w.(http.Flusher).Flush()
			select {
			case <-stall:
			case <-r.Context().Done():
			}
			return true
		},
		open: func(src *registrySource, descs []ocispec.Descriptor) Sequence {
			return FetchSequence(context.Background(), src, descs)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			smallRanges(t, 1000, 2)
			s, srv, descs := newBlobServer(t, randomBlob(t, 5000))
			stall := make(chan struct{})
			defer close(stall)
			s.serve = func(w http.ResponseWriter, r *http.Request, b []byte) bool { return tc.serve(w, r, b, stall) }
			seq := tc.open(testSource(srv), descs)
			defer seq.Close()
			rc, done := readWaiting(t, seq)
			rc.Close()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a read of a blob closed before its end returned all of it")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read still waits 10 s after the blob was closed")
			}
		})
	}
}

// A request that gets no answer (the server closes the connection first:
// net/http's error then wraps io.EOF) is asked again; one that never gets an
// answer reaches the reader as an error that is not io.EOF, which would
// read as the blob's end in the middle of it.
func TestRangedSequence_NoAnswerIsNotTheEnd(t *testing.T) {
	blob := randomBlob(t, 5000)
	for _, tc := range []struct {
		name  string
		drops int32 // how many ranges after the first get no answer
		ok    bool
	}{{"once, then answered", 1, true}, {"never answered", 1000, false}} {
		t.Run(tc.name, func(t *testing.T) {
			smallRanges(t, 1000, 2)
			s, srv, descs := newBlobServer(t, blob)
			var drops atomic.Int32
			s.serve = func(w http.ResponseWriter, r *http.Request, b []byte) bool {
				if r.Header.Get("Range") == "bytes=0-999" || drops.Add(1) > tc.drops {
					return false
				}
				dropConnection(w)
				return true
			}
			seq := newRangedSequence(context.Background(), testSource(srv).repo, descs, 0, 0)
			defer seq.Close()
			got, err := readAll(seq, 1)
			switch {
			case tc.ok && (err != nil || !bytes.Equal(got[0], blob)):
				t.Fatalf("%v", err)
			case !tc.ok && (err == nil || errors.Is(err, io.EOF)):
				t.Fatalf("error %v, want one that is not io.EOF", err)
			}
		})
	}
}

// readWaiting opens seq's next blob and reads it to its end in a goroutine,
// whose error done brings; it returns once the reader has had 100 ms to
// start waiting.
func readWaiting(t *testing.T, seq Sequence) (io.ReadCloser, <-chan error) {
	t.Helper()
	rc, err := seq.Next()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(rc)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	return rc, done
}

// The next blob's GET is sent as soon as the current blob's bytes have all
// come, before the reader asks for the next blob; Next then takes its answer
// instead of asking again.
func TestFetchSequence_NextBlobAskedAhead(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 20000), randomBlob(t, 9000), randomBlob(t, 7000)}
	s, srv, descs := newBlobServer(t, blobs...)
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	requests := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.requests)
	}
	for i, blob := range blobs {
		rc, err := seq.Next()
		if err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
		b, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(b, blob) {
			t.Fatalf("blob %d: %d bytes, %v", i, len(b), err)
		}
		want := min(i+2, len(blobs))
		deadline := time.Now().Add(5 * time.Second)
		for requests() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := requests(); got != want {
			t.Fatalf("after blob %d was read whole and before Next: %d GETs, want %d", i, got, want)
		}
		rc.Close()
	}
	if with, without := s.ranges(); with != 0 || without != len(blobs) {
		t.Fatalf("%d GETs with a Range and %d without, want 0 and %d: %q", with, without, len(blobs), s.requests)
	}
}

// A blob the GET ahead does not find fails Next, not the blob before it,
// whose bytes all come with io.EOF.
func TestFetchSequence_MissingNextBlobFailsNext(t *testing.T) {
	smallRanges(t, 1000, 3)
	blob := randomBlob(t, 20000)
	_, srv, descs := newBlobServer(t, blob)
	gone := digest.FromString("not served")
	descs = append(descs, ocispec.Descriptor{MediaType: "application/octet-stream", Digest: gone, Size: 5000})
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	defer seq.Close()
	rc, err := seq.Next()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(b, blob) {
		t.Fatalf("the blob before the missing one: %d bytes, %v", len(b), err)
	}
	rc.Close()
	if _, err := seq.Next(); !IsNotFound(err) {
		t.Fatalf("Next of the missing blob: %v, want not found", err)
	}
}

// Closing the sequence drops a GET sent ahead that nobody read: its
// connection is closed, which the server sees as the request's end.
func TestFetchSequence_CloseDropsTheGETAhead(t *testing.T) {
	smallRanges(t, 1000, 3)
	blobs := [][]byte{randomBlob(t, 20000), randomBlob(t, 9000)}
	s, srv, descs := newBlobServer(t, blobs...)
	ended := make(chan struct{})
	s.serve = func(w http.ResponseWriter, r *http.Request, b []byte) bool {
		if len(b) != len(blobs[1]) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		_, _ = w.Write(b[:1000])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(ended)
		case <-time.After(10 * time.Second):
		}
		return true
	}
	seq := FetchSequence(context.Background(), testSource(srv), descs)
	rc, err := seq.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.requests)
		s.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	seq.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the GET sent ahead is still open 5 s after the sequence was closed")
	}
}
