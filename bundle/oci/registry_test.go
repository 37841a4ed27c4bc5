package oci

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2/content"
)

const (
	testSession = "SESSION0b6f3f2c9a7e"
	testState   = "STATEeyJuYW1lIjoic2VjcmV0In0"
)

// failingUploads is a registry that opens blob uploads at a Location with a
// session id and a _state query, then drops the connection of every request
// to that Location; with badLocation it answers the POST with a Location
// that is not a URL.
func failingUploads(t *testing.T, badLocation bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
			loc := "/v2/assisted/node0/blobs/uploads/" + testSession + "?_state=" + testState
			if badLocation {
				loc = "http://%zz/v2/assisted/node0/blobs/uploads/" + testSession + "?_state=" + testState
			}
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusAccepted)
		case strings.Contains(r.URL.Path, testSession):
			dropConnection(w)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func assertNoLocation(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the upload succeeded against a registry that drops it", what)
	}
	msg := err.Error()
	if strings.Contains(msg, testSession) || strings.Contains(msg, testState) {
		t.Fatalf("%s: the error shows the upload location:\n%s", what, msg)
	}
	if !strings.Contains(msg, "<redacted>") {
		t.Fatalf("%s: the error should name the redacted location:\n%s", what, msg)
	}
}

func registryWriterFor(t *testing.T, host string) Writer {
	t.Helper()
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(t.TempDir(), "none.json"))
	ref, err := ParseReference(host + "/assisted/node0:v1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(context.Background(), ref, RegistryOptions{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRegistryWriter_UploadErrorsHideLocation: a failed streamed upload, a
// failed upload from a spool file (whose *UploadError keeps the session to
// resume) and a malformed Location never show the session or its _state.
func TestRegistryWriter_UploadErrorsHideLocation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	w := registryWriterFor(t, failingUploads(t, false))
	bw, err := w.NewBlob(ctx, "application/octet-stream", BlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Write([]byte("layer bytes")); err != nil {
		t.Fatal(err)
	}
	_, err = bw.Commit()
	assertNoLocation(t, "streamed upload", err)

	blob := []byte("spooled layer")
	path := filepath.Join(t.TempDir(), "spool")
	if err := os.WriteFile(path, blob, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = w.(Resumer).PushFile(ctx, content.NewDescriptorFromBytes("application/octet-stream", blob), path, nil, nil)
	assertNoLocation(t, "upload from a spool file", err)
	var ue *UploadError
	if !errors.As(err, &ue) || ue.Session == nil || !strings.Contains(ue.Session.Location, testState) {
		t.Fatalf("the *UploadError must keep the real session to resume (the spool state, not the message): %#v", ue)
	}

	w = registryWriterFor(t, failingUploads(t, true))
	_, err = w.NewBlob(ctx, "application/octet-stream", BlobOptions{})
	assertNoLocation(t, "malformed Location", err)
}

// dropConnection closes the connection under w without an answer (or with
// what w has already sent): a registry whose stream breaks.
func dropConnection(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}
