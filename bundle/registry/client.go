package registry

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Options configure how registries are reached.
type Options struct {
	// AuthFile is a docker config.json or podman auth.json, the only one
	// read; empty means the search order of AuthFiles.
	AuthFile string
	// CAFile is a PEM bundle added to the system roots.
	CAFile string
	// PlainHTTP talks HTTP instead of HTTPS (explicit opt-in).
	PlainHTTP bool
	// InsecureSkipTLSVerify skips the certificate check (explicit opt-in).
	InsecureSkipTLSVerify bool
	// UserAgent is sent with every request; empty keeps oras-go's.
	UserAgent string
}

// maxIdleConnsPerHost is the idle connections kept per registry: more than
// the uploads or range fetches a pull or push runs at a time.
const maxIdleConnsPerHost = 8

// MinTLSVersion is the oldest TLS version a registry may speak.
const MinTLSVersion = tls.VersionTLS12

// Transport returns the HTTP transport of every registry client: TLS 1.2
// at least, the system roots plus opts.CAFile, the proxy from the
// environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), without retries.
func Transport(opts Options) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	tr.ResponseHeaderTimeout = 5 * time.Minute
	// Parts are uploaded, and ranges fetched, several at a time: keep a
	// connection for each (net/http keeps 2 per host unless told).
	tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	cfg := &tls.Config{MinVersion: MinTLSVersion, InsecureSkipVerify: opts.InsecureSkipTLSVerify} //nolint:gosec // only when the user asks for it
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read registry CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA file %s holds no PEM certificate", opts.CAFile)
		}
		cfg.RootCAs = pool
	}
	tr.TLSClientConfig = cfg
	return tr, nil
}

// Client reaches registries with one transport and one credential chain. It
// is a remote.Client: the repositories it makes send every request through
// it, and every error it returns is redacted.
type Client struct {
	opts  Options
	creds *Credentials
	auth  *auth.Client
}

// New builds a client from opts, reading the auth files of
// AuthFiles(opts.AuthFile).
func New(opts Options) (*Client, error) {
	creds, err := NewCredentials(opts.AuthFile)
	if err != nil {
		return nil, err
	}
	return NewWithCredentials(opts, creds)
}

// NewWithCredentials builds a client with a credential chain the caller
// extended (Credentials.AddDockerConfig).
func NewWithCredentials(opts Options, creds *Credentials) (*Client, error) {
	tr, err := Transport(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: opts, creds: creds}
	c.auth = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(recordAuth{tr})},
		Cache:      auth.NewCache(),
		Credential: creds.Get,
	}
	if opts.UserAgent != "" {
		c.auth.SetUserAgent(opts.UserAgent)
	}
	return c, nil
}

// HTTP1 returns a client like c whose requests each take a connection of
// their own (HTTP/1.1, never HTTP/2): ranges of a blob fetched side by side
// then travel on as many TCP streams, where HTTP/2 would carry them all on
// one, which a long path limits as it limits one stream. It shares c's
// credentials and token cache.
func (c *Client) HTTP1() (*Client, error) {
	tr, err := Transport(c.opts)
	if err != nil {
		return nil, err
	}
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	h := &Client{opts: c.opts, creds: c.creds}
	h.auth = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(recordAuth{tr})},
		Cache:      c.auth.Cache,
		Credential: c.auth.Credential,
		Header:     c.auth.Header.Clone(),
	}
	return h, nil
}

// maxReplayBuffer bounds the body Do keeps in memory to resend it after an
// auth challenge (manifests are at most 4 MiB).
const maxReplayBuffer = 4 << 20

// Do sends req with credentials; its error is redacted. A small body that
// cannot be replayed is buffered first, as oras-go does for manifests when
// the client is its own auth.Client: the first request to a registry may be
// answered by an auth challenge and sent again.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil && req.ContentLength > 0 && req.ContentLength <= maxReplayBuffer {
		b, err := io.ReadAll(io.LimitReader(req.Body, req.ContentLength+1))
		req.Body.Close()
		if err != nil {
			return nil, Redact(fmt.Errorf("read the request body: %w", err))
		}
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.Body, _ = req.GetBody()
	}
	resp, err := c.auth.Do(req)
	if err != nil {
		return nil, Redact(err)
	}
	return resp, nil
}

// Repository returns a client of host's repository. Its own errors (oras-go
// builds them from responses) name request URLs: pass them through Redact.
func (c *Client) Repository(host, repository string) *remote.Repository {
	return &remote.Repository{
		Client:    c,
		Reference: registry.Reference{Registry: host, Repository: repository},
		PlainHTTP: c.opts.PlainHTTP,
	}
}

// recordAuth remembers the Authorization values sent (bearer tokens from
// token servers included) for Redact.
type recordAuth struct{ rt http.RoundTripper }

func (r recordAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if h := req.Header.Get("Authorization"); h != "" {
		if _, v, ok := strings.Cut(h, " "); ok {
			rememberSecret(strings.TrimSpace(v))
		}
	}
	return r.rt.RoundTrip(req)
}
