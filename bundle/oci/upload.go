package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// DefaultChunkSize is the size of one PATCH of an upload streamed from memory.
// Registries backed by object stores need at least 5 MiB per chunk; memChunks
// chunks are in memory at a time.
const DefaultChunkSize = 8 << 20

// maxFileChunk bounds one PATCH of an upload read from a spool file: the bytes
// are not in memory (the kernel sends them from the page cache), so chunks can
// be large; a failed one is resent from the offset the registry reports.
const maxFileChunk = 64 << 20

const maxChunkAttempts = 4

// UploadSession is an open blob upload of a registry (OCI distribution-spec
// "pushing a blob in chunks"): the next PATCH goes to Location, and the
// registry held Offset bytes when it last answered. It outlives the process:
// a later run resumes it where the registry says it stands. Location is a
// capability to write into the session (no credential: every request is
// authenticated anew); keep it private like the rest of the spool.
type UploadSession struct {
	Registry   string `json:"registry"`
	Repository string `json:"repository"`
	Location   string `json:"location"`
	Offset     int64  `json:"offset"`
}

// UploadError is a blob the registry did not store. When the blob was
// produced completely (into a spool file), Session, if not nil, is where a
// later PushFile can resume.
type UploadError struct {
	Session *UploadSession
	Err     error
}

func (e *UploadError) Error() string { return e.Err.Error() }
func (e *UploadError) Unwrap() error { return e.Err }

// uploader drives one upload session.
type uploader struct {
	repo     *remote.Repository
	ctx      context.Context
	loc      *url.URL
	offset   int64 // what the registry holds
	minChunk int
	// sent counts the bytes put on the wire, resends included (tests and
	// results measure resumption with it).
	sent int64
}

func newUploader(ctx context.Context, repo *remote.Repository) *uploader {
	ref := registry.Reference{Registry: repo.Reference.Registry, Repository: repo.Reference.Repository}
	ctx = auth.AppendRepositoryScope(ctx, ref, auth.ActionPull, auth.ActionPush)
	return &uploader{repo: repo, ctx: ctx}
}

func (u *uploader) base() string { return registryURL(u.repo) }

// registryURL is the scheme and host of repo's registry.
func registryURL(repo *remote.Repository) string {
	if repo.PlainHTTP {
		return "http://" + repo.Reference.Registry
	}
	return "https://" + repo.Reference.Registry
}

// start opens a new session (POST).
func (u *uploader) start() (err error) {
	defer func() { err = redact(err) }()
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPost, u.base()+"/v2/"+u.repo.Reference.Repository+"/blobs/uploads/", nil)
	if err != nil {
		return err
	}
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return fmt.Errorf("start blob upload: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("start blob upload: %w", responseError(resp))
	}
	loc, err := location(resp)
	if err != nil {
		return fmt.Errorf("start blob upload: %w", err)
	}
	u.loc, u.offset = loc, 0
	u.minChunk, _ = strconv.Atoi(resp.Header.Get("OCI-Chunk-Min-Length"))
	return nil
}

// resume reopens a session of an earlier run: the registry says how much it
// holds. It fails when the session is gone (expired, or another registry).
func (u *uploader) resume(s UploadSession) (err error) {
	defer func() { err = redact(err) }()
	if s.Registry != u.repo.Reference.Registry || s.Repository != u.repo.Reference.Repository {
		return fmt.Errorf("the upload session is for %s/%s", s.Registry, s.Repository)
	}
	loc, err := url.Parse(s.Location)
	if err != nil {
		return err
	}
	next, off, err := u.status(loc)
	if err != nil {
		return err
	}
	u.loc, u.offset = next, off
	return nil
}

// Session is where this upload stands, for a later run.
func (u *uploader) Session() *UploadSession {
	if u.loc == nil {
		return nil
	}
	return &UploadSession{Registry: u.repo.Reference.Registry, Repository: u.repo.Reference.Repository, Location: u.loc.String(), Offset: u.offset}
}

// body is one PATCH's content at a blob offset.
type body interface {
	// open returns the content from blob offset off to the end of the chunk,
	// and its length.
	open(off int64) (io.ReadCloser, int64, error)
	// start and end are the chunk's blob offsets.
	bounds() (start, end int64)
}

// memBody is a chunk in memory.
type memBody struct {
	data  []byte
	start int64
}

func (m memBody) bounds() (int64, int64) { return m.start, m.start + int64(len(m.data)) }
func (m memBody) open(off int64) (io.ReadCloser, int64, error) {
	b := m.data[off-m.start:]
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

// fileBody is a section of a spool file. Each attempt opens the file anew and
// hands net/http a fileSection, which exposes the file descriptor: the kernel
// sends the chunk from the page cache (sendfile), it is never copied through
// this process.
type fileBody struct {
	path       string
	start, end int64
}

func (f fileBody) bounds() (int64, int64) { return f.start, f.end }
func (f fileBody) open(off int64) (io.ReadCloser, int64, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, 0, err
	}
	if _, err := fh.Seek(off, io.SeekStart); err != nil {
		fh.Close()
		return nil, 0, err
	}
	return &fileSection{f: fh, end: f.end}, f.end - off, nil
}

// fileSection reads a file from its current position up to end, though the
// file may be longer (a spool file still growing). It implements
// syscall.Conn so that net/http's copy to the connection uses sendfile,
// which moves the file position; Read therefore asks the file where it is.
type fileSection struct {
	f   *os.File
	end int64
}

func (s *fileSection) Read(p []byte) (int, error) {
	pos, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if pos >= s.end {
		return 0, io.EOF
	}
	if int64(len(p)) > s.end-pos {
		p = p[:s.end-pos]
	}
	return s.f.Read(p)
}

func (s *fileSection) Close() error { return s.f.Close() }

func (s *fileSection) SyscallConn() (syscall.RawConn, error) { return s.f.SyscallConn() }

// patch sends the chunk b, which starts at u.offset, resending from the
// offset the registry reports when an attempt fails.
func (u *uploader) patch(b body) (err error) {
	defer func() { err = redact(err) }()
	start, end := b.bounds()
	if start != u.offset {
		return fmt.Errorf("upload chunk: at offset %d, the registry holds %d bytes", start, u.offset)
	}
	var lastErr error
	for attempt := 0; attempt < maxChunkAttempts; attempt++ {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		if u.offset < start || u.offset > end {
			return fmt.Errorf("upload chunk: registry reports offset %d outside chunk %d-%d", u.offset, start, end)
		}
		if u.offset == end {
			return nil
		}
		err := u.patchOnce(b)
		if err == nil {
			return nil
		}
		lastErr = err
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// Ask where the registry is; resend from there.
		l, off, serr := u.status(u.loc)
		if serr != nil {
			return fmt.Errorf("upload chunk at offset %d: %w (then asking the registry where the upload stands: %v)", u.offset, err, serr)
		}
		u.loc, u.offset = l, off
	}
	return fmt.Errorf("upload chunk at offset %d: %d attempts failed: %w", start, maxChunkAttempts, lastErr)
}

func (u *uploader) patchOnce(b body) error {
	rc, n, err := b.open(u.offset)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPatch, u.loc.String(), rc)
	if err != nil {
		rc.Close()
		return err
	}
	off := u.offset
	req.ContentLength = n
	req.GetBody = func() (io.ReadCloser, error) {
		rc, _, err := b.open(off)
		return rc, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Range", fmt.Sprintf("%d-%d", off, off+n-1))
	u.sent += n
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return responseError(resp)
	}
	next, err := location(resp)
	if err != nil {
		return err
	}
	u.loc, u.offset = next, off+n
	return nil
}

// status asks the registry how much of the upload it holds (GET on the session).
func (u *uploader) status(loc *url.URL) (_ *url.URL, _ int64, err error) {
	defer func() { err = redact(err) }()
	req, err := http.NewRequestWithContext(u.ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return nil, 0, responseError(resp)
	}
	next, err := location(resp)
	if err != nil {
		next = loc
	}
	rng := resp.Header.Get("Range")
	if rng == "" {
		return next, 0, nil
	}
	_, end, ok := strings.Cut(strings.TrimPrefix(rng, "bytes="), "-")
	if !ok {
		return nil, 0, fmt.Errorf("bad Range %q", rng)
	}
	e, err := strconv.ParseInt(end, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("bad Range %q", rng)
	}
	return next, e + 1, nil
}

func (u *uploader) finish(d digest.Digest) (err error) {
	defer func() { err = redact(err) }()
	q := u.loc.Query()
	q.Set("digest", d.String())
	final := *u.loc
	final.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPut, final.String(), http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return fmt.Errorf("complete blob upload: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("complete blob upload of %s: %w", d, responseError(resp))
	}
	return nil
}

// cancel tells the registry to drop a failed session; best effort.
func (u *uploader) cancel() {
	if u.loc == nil {
		return
	}
	ctx := context.WithoutCancel(u.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.loc.String(), nil)
	if err != nil {
		return
	}
	if resp, err := u.repo.Client.Do(req); err == nil {
		drain(resp)
	}
}

func location(resp *http.Response) (*url.URL, error) {
	l := resp.Header.Get("Location")
	if l == "" {
		return nil, fmt.Errorf("registry answered %s without an upload Location", resp.Status)
	}
	u, err := resp.Request.URL.Parse(l)
	if err != nil {
		return nil, fmt.Errorf("registry answered %s with an upload Location that is not a URL: %w", resp.Status, redact(err))
	}
	return u, nil
}

// responseError is the status and the start of the registry's error body
// (distribution's JSON errors carry codes, never our content).
func responseError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		return fmt.Errorf("registry answered %s", resp.Status)
	}
	return fmt.Errorf("registry answered %s: %s", resp.Status, msg)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}
