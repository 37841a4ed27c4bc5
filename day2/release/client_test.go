package release

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// basicAuthRegistry serves one OCI manifest at /v2/ocp/release/manifests/v1
// to requests with user:pass, and 401 with a Basic challenge to others.
func basicAuthRegistry(t *testing.T, user, pass string) string {
	t.Helper()
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`)
	sum := sha256.Sum256(manifest)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v2/ocp/release/manifests/v1" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+hex.EncodeToString(sum[:]))
		w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(manifest)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func dockerConfig(host, user, pass string) []byte {
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, base64.StdEncoding.EncodeToString([]byte(user+":"+pass))))
}

// TestNew_LocalAuthFilesBeforePullSecret: the registry layer's auth-file
// order (here $DOCKER_CONFIG/config.json, which this client used to ignore)
// wins over the cluster's pull secret, which fills in when no file has the
// registry.
func TestNew_LocalAuthFilesBeforePullSecret(t *testing.T) {
	host := basicAuthRegistry(t, "kat", "right-pass")
	dir := t.TempDir()
	for _, k := range []string{"REGISTRY_AUTH_FILE", "XDG_CONFIG_HOME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	t.Setenv("DOCKER_CONFIG", filepath.Join(dir, "docker"))
	if err := os.MkdirAll(filepath.Join(dir, "docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	resolve := func(pullSecret []byte) error {
		c, err := New(Options{PlainHTTP: true, PullSecret: pullSecret})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.resolveOne(context.Background(), host+"/ocp/release:v1", "amd64")
		return err
	}

	// No file: the pull secret's credentials are used.
	if err := resolve(dockerConfig(host, "kat", "right-pass")); err != nil {
		t.Fatalf("pull secret only: %v", err)
	}
	if err := resolve(dockerConfig(host, "kat", "wrong-pass")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong pull secret must be refused with 401, got %v", err)
	}
	// $DOCKER_CONFIG/config.json wins over the pull secret.
	if err := os.WriteFile(filepath.Join(dir, "docker", "config.json"), dockerConfig(host, "kat", "right-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := resolve(dockerConfig(host, "kat", "wrong-pass")); err != nil {
		t.Fatalf("the local file must win over the pull secret: %v", err)
	}
	if err := resolve(nil); err != nil {
		t.Fatalf("local file only: %v", err)
	}
}
