package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// DefaultChunkSize is the size of one PATCH of a streamed upload. Registries
// backed by object stores need at least 5 MiB per chunk; two chunks are in
// memory at a time.
const DefaultChunkSize = 8 << 20

const maxChunkAttempts = 4

// streamUpload pushes a blob whose digest and size are only known at its end:
// POST opens an upload session, each chunk goes up as a PATCH with its
// Content-Range while the next one is read, and a final PUT names the digest
// (OCI distribution-spec "pushing a blob in chunks"). No temp file, and memory
// stays at two chunks whatever the blob size. A chunk that fails is resent from
// the offset the registry reports, so a transient error costs one chunk.
func streamUpload(ctx context.Context, repo *remote.Repository, mediaType string, r io.Reader, chunkSize int) (ocispec.Descriptor, error) {
	if chunkSize <= 0 {
		chunkSize = DefaultChunkSize
	}
	ref := registry.Reference{Registry: repo.Reference.Registry, Repository: repo.Reference.Repository}
	ctx = auth.AppendRepositoryScope(ctx, ref, auth.ActionPull, auth.ActionPush)
	u := &uploader{repo: repo, ctx: ctx}
	loc, minChunk, err := u.start(ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if minChunk > chunkSize {
		chunkSize = minChunk
	}

	// Read and hash in this goroutine, upload in another: two buffers in flight.
	type chunk struct {
		buf []byte
		n   int
	}
	free := make(chan []byte, 2)
	free <- make([]byte, chunkSize)
	free <- make([]byte, chunkSize)
	full := make(chan chunk)
	done := make(chan error, 1)
	failed := make(chan struct{})
	go func() {
		var uerr error
		for c := range full {
			if uerr == nil {
				if loc, uerr = u.patch(loc, c.buf[:c.n]); uerr != nil {
					close(failed)
				}
			}
			free <- c.buf
		}
		done <- uerr
	}()

	h := sha256.New()
	var size int64
	var rerr error
	for {
		var buf []byte
		select {
		case buf = <-free:
		case <-failed:
		case <-ctx.Done():
			rerr = ctx.Err()
		}
		if buf == nil {
			break // cancelled, or the uploader failed and says why below
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			h.Write(buf[:n])
			size += int64(n)
			full <- chunk{buf: buf, n: n}
		} else {
			free <- buf
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	close(full)
	uerr := <-done
	if rerr != nil {
		u.cancel(loc)
		return ocispec.Descriptor{}, rerr
	}
	if uerr != nil {
		u.cancel(loc)
		return ocispec.Descriptor{}, uerr
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigest(digest.SHA256, h), Size: size}
	if err := u.finish(loc, desc.Digest); err != nil {
		return ocispec.Descriptor{}, err
	}
	return desc, nil
}

type uploader struct {
	repo   *remote.Repository
	ctx    context.Context
	offset int64
}

func (u *uploader) base() string {
	scheme := "https"
	if u.repo.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + u.repo.Reference.Registry
}

func (u *uploader) start(ref registry.Reference) (*url.URL, int, error) {
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPost, u.base()+"/v2/"+ref.Repository+"/blobs/uploads/", nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("start blob upload: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		return nil, 0, fmt.Errorf("start blob upload: %w", responseError(resp))
	}
	loc, err := location(resp)
	if err != nil {
		return nil, 0, fmt.Errorf("start blob upload: %w", err)
	}
	minChunk, _ := strconv.Atoi(resp.Header.Get("OCI-Chunk-Min-Length"))
	return loc, minChunk, nil
}

// patch sends data at u.offset, resending from the offset the registry has
// when an attempt fails, and returns the next upload location.
func (u *uploader) patch(loc *url.URL, data []byte) (*url.URL, error) {
	start := u.offset
	var lastErr error
	for attempt := 0; attempt < maxChunkAttempts; attempt++ {
		if err := u.ctx.Err(); err != nil {
			return nil, err
		}
		skip := u.offset - start
		if skip < 0 || skip > int64(len(data)) {
			return nil, fmt.Errorf("upload chunk: registry reports offset %d outside chunk %d-%d", u.offset, start, start+int64(len(data)))
		}
		if skip == int64(len(data)) {
			return loc, nil
		}
		next, err := u.patchOnce(loc, data[skip:])
		if err == nil {
			return next, nil
		}
		lastErr = err
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		// Ask where the registry is; resend from there.
		l, off, serr := u.status(loc)
		if serr != nil {
			return nil, fmt.Errorf("upload chunk at offset %d: %w (status: %v)", u.offset, err, serr)
		}
		loc, u.offset = l, off
	}
	return nil, fmt.Errorf("upload chunk at offset %d: %d attempts failed: %w", start, maxChunkAttempts, lastErr)
}

func (u *uploader) patchOnce(loc *url.URL, data []byte) (*url.URL, error) {
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPatch, loc.String(), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Range", fmt.Sprintf("%d-%d", u.offset, u.offset+int64(len(data))-1))
	resp, err := u.repo.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return nil, responseError(resp)
	}
	next, err := location(resp)
	if err != nil {
		return nil, err
	}
	u.offset += int64(len(data))
	return next, nil
}

// status asks the registry how much of the upload it holds (GET on the session).
func (u *uploader) status(loc *url.URL) (*url.URL, int64, error) {
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

func (u *uploader) finish(loc *url.URL, d digest.Digest) error {
	q := loc.Query()
	q.Set("digest", d.String())
	final := *loc
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
func (u *uploader) cancel(loc *url.URL) {
	ctx := context.WithoutCancel(u.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, loc.String(), nil)
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
		return nil, fmt.Errorf("registry upload Location %q: %w", l, err)
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
