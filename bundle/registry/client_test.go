package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2/content"
)

// caFile writes the test server's certificate as a CA bundle.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tlsServer(t *testing.T, maxVersion uint16) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: maxVersion} //nolint:gosec // a legacy server to be refused
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTransport_RefusesTLS11(t *testing.T) {
	authEnv(t, nil)
	tr, err := Transport(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.TLSClientConfig.MinVersion != 0x0303 { // TLS 1.2
		t.Fatalf("MinVersion %#x, want 0x0303 (TLS 1.2)", tr.TLSClientConfig.MinVersion)
	}
	if tr.Proxy == nil {
		t.Fatal("the transport must take the proxy from the environment")
	}

	old := tlsServer(t, tls.VersionTLS11)
	modern := tlsServer(t, tls.VersionTLS12)
	for _, insecure := range []bool{false, true} {
		c, err := New(Options{CAFile: caFile(t, old), InsecureSkipTLSVerify: insecure})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, old.URL+"/v2/", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("insecure=%v: a TLS 1.1-only registry was accepted", insecure)
		}
		if !strings.Contains(err.Error(), "protocol version") {
			t.Fatalf("insecure=%v: want a protocol version failure, got %v", insecure, err)
		}
		// The same client setup reaches a TLS 1.2 server: the version, not
		// the certificate, is what failed.
		c, err = New(Options{CAFile: caFile(t, modern), InsecureSkipTLSVerify: insecure})
		if err != nil {
			t.Fatal(err)
		}
		req, _ = http.NewRequest(http.MethodGet, modern.URL+"/v2/", nil)
		resp, err = c.Do(req)
		if err != nil {
			t.Fatalf("insecure=%v: TLS 1.2 server: %v", insecure, err)
		}
		resp.Body.Close()
	}
}

func TestTransport_CAFile(t *testing.T) {
	authEnv(t, nil)
	srv := tlsServer(t, tls.VersionTLS13)
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/", nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("an unknown CA was trusted without --ca-file or the insecure opt-in")
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := New(Options{CAFile: bad}); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Fatalf("a CA file without a certificate: %v", err)
	}
}

const (
	secretSession = "SESSIONd41d8cd98f00b204"
	secretState   = "STATEc2VjcmV0LXN0YXRl"
)

// uploadServer answers a blob upload's POST with a Location carrying a
// session id and a _state query, then drops the connection of every request
// to that Location (drop), or answers it 400 with a distribution error.
func uploadServer(t *testing.T, drop bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
			w.Header().Set("Location", "/v2/assisted/node0/blobs/uploads/"+secretSession+"?_state="+secretState)
			w.WriteHeader(http.StatusAccepted)
		case strings.Contains(r.URL.Path, secretSession) && !drop:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errors":[{"code":"DIGEST_INVALID","message":"provided digest did not match uploaded content"}]}`))
		case strings.Contains(r.URL.Path, secretSession):
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("no hijacker")
				return
			}
			conn, _, _ := hj.Hijack()
			conn.Close()
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRedact_FailedUploadHidesLocation: the client's own error (a dropped
// connection, a *url.Error naming the upload location) is redacted as
// returned.
func TestRedact_FailedUploadHidesLocation(t *testing.T) {
	authEnv(t, nil)
	err := failedPush(t, true)
	if err == nil {
		t.Fatal("the upload succeeded against a server that drops it")
	}
	msg := err.Error()
	for _, s := range []string{secretSession, secretState} {
		if strings.Contains(msg, s) {
			t.Fatalf("the error shows the upload location's %q:\n%s", s, msg)
		}
	}
	if !strings.Contains(msg, "/blobs/uploads/"+Redacted) {
		t.Fatalf("the error should name the redacted upload location:\n%s", msg)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("the *url.Error is no longer in the chain: %v", err)
	}
	if strings.Contains(ue.URL, secretSession) || strings.Contains(ue.URL, secretState) {
		t.Fatalf("the *url.Error in the chain keeps the location: %s", ue.URL)
	}
}

// failedPush pushes a blob with oras-go through a Client against
// uploadServer and returns its error as oras-go returns it.
func failedPush(t *testing.T, drop bool) error {
	t.Helper()
	srv := uploadServer(t, drop)
	c, err := New(Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	repo := c.Repository(strings.TrimPrefix(srv.URL, "http://"), "assisted/node0")
	blob := []byte("layer")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return repo.Push(ctx, content.NewDescriptorFromBytes("application/octet-stream", blob), bytes.NewReader(blob))
}

// TestRedact_RegistryErrorHidesLocation: oras-go's error for a refused
// upload names the request URL; Redact hides the session and the query.
func TestRedact_RegistryErrorHidesLocation(t *testing.T) {
	authEnv(t, nil)
	raw := failedPush(t, false)
	if raw == nil || !strings.Contains(raw.Error(), secretState) {
		t.Fatalf("the test needs oras-go's error to name the location, got %v", raw)
	}
	msg := Redact(raw).Error()
	if strings.Contains(msg, secretSession) || strings.Contains(msg, secretState) {
		t.Fatalf("the error shows the upload location:\n%s", msg)
	}
	if !strings.Contains(msg, "digest invalid") || !strings.Contains(msg, "/blobs/uploads/"+Redacted+"?"+Redacted) {
		t.Fatalf("the redacted error should keep the registry's code and the redacted location:\n%s", msg)
	}
}

func TestRedactText(t *testing.T) {
	rememberSecret("hunter2-pass")
	cases := map[string]string{
		`Put "https://r.example:5000/v2/a/b/blobs/uploads/abc-123?_state=xyz&digest=sha256:1": EOF`:     `Put "https://r.example:5000/v2/a/b/blobs/uploads/<redacted>?<redacted>": EOF`,
		`GET https://user:pw@r.example/v2/a/manifests/v1: 401`:                                          `GET https://r.example/v2/a/manifests/v1: 401`,
		`Location /v2/a/blobs/uploads/abc?_state=xyz is bad`:                                            `Location /v2/a/blobs/uploads/<redacted> is bad`,
		`fetch https://s3.example/blob?X-Amz-Signature=deadbeef: 403`:                                   `fetch https://s3.example/blob?<redacted>: 403`,
		`server said {"token":"eyJhbGciOi.x.y"} and the password hunter2-pass`:                          `server said {"token":"<redacted>"} and the password <redacted>`,
		`relative ?_state=abc&x=1`:                                                                      `relative ?_state=<redacted>&x=1`,
		`Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abcdefghijkl`:                                       `Authorization: Bearer <redacted>`,
		`basic credential not found`:                                                                    `basic credential not found`,
		`GET "https://r.example/v2/a/manifests/sha256:abc": response status code 404: MANIFEST_UNKNOWN`: `GET "https://r.example/v2/a/manifests/sha256:abc": response status code 404: MANIFEST_UNKNOWN`,
	}
	for in, want := range cases {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	if Redact(nil) != nil {
		t.Fatal("Redact(nil) must be nil")
	}
	base := context.Canceled
	if err := Redact(base); !errors.Is(err, context.Canceled) {
		t.Fatal("Redact must keep errors.Is")
	}
}

// TestClient_ReplaysSmallBodyAfterChallenge: a small body whose reader
// cannot be rewound is still sent when the registry first answers with a
// Basic challenge (oras-go's auth.Client refuses to resend it).
func TestClient_ReplaysSmallBodyAfterChallenge(t *testing.T) {
	d := authEnv(t, map[string]string{"DOCKER_CONFIG": "$T/docker"})
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	writeAuth(t, d+"/docker/config.json", map[string][2]string{host: {"kat", "pw-1234"}})
	c, err := New(Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{"schemaVersion":2}`)
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v2/a/b/manifests/v1", io.MultiReader(bytes.NewReader(manifest))) // no GetBody
	req.ContentLength = int64(len(manifest))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("PUT after a challenge: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT after a challenge: %s", resp.Status)
	}
	if string(got) != string(manifest) {
		t.Fatalf("the registry got %q", got)
	}
}
