package pgtest

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

// rewriteStream copies a dump stream member by member through edit, which may
// change a member's body (return nil to drop the member).
func rewriteStream(t testing.TB, stream []byte, edit func(name string, body []byte) []byte) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(stream))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		body = edit(h.Name, body)
		if body == nil {
			continue
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// memberOffsets returns where each member's body starts in the stream and
// how long it is.
func memberOffsets(t testing.TB, stream []byte) (names []string, starts, sizes []int64) {
	t.Helper()
	r := bytes.NewReader(stream)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, starts, sizes
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		starts = append(starts, int64(len(stream))-int64(r.Len()))
		sizes = append(sizes, h.Size)
	}
}

// dataMiddle is an offset in the middle of the stream's table data.
func dataMiddle(t testing.TB, stream []byte) int64 {
	t.Helper()
	names, starts, sizes := memberOffsets(t, stream)
	first, last := int64(-1), int64(-1)
	for i, n := range names {
		if strings.HasPrefix(n, "data/") {
			if first < 0 {
				first = starts[i]
			}
			last = starts[i] + sizes[i]
		}
	}
	if first < 0 {
		t.Fatal("stream has no data members")
	}
	return (first + last) / 2
}

// pausingReader serves a stream and, once `at` bytes were read, signals
// paused and blocks until resume is closed: the restore is then in the middle
// of a COPY, waiting for data.
type pausingReader struct {
	r      io.Reader
	n, at  int64
	paused chan struct{}
	resume chan struct{}
	once   sync.Once
}

func newPausingReader(stream []byte, at int64) *pausingReader {
	return &pausingReader{r: bytes.NewReader(stream), at: at, paused: make(chan struct{}), resume: make(chan struct{})}
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if p.n >= p.at {
		p.once.Do(func() { close(p.paused) })
		<-p.resume
	} else if rest := p.at - p.n; int64(len(b)) > rest {
		b = b[:rest]
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}
