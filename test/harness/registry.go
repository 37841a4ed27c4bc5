package harness

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/olareg/olareg"
	"github.com/olareg/olareg/config"
	"golang.org/x/crypto/bcrypt"
)

// Registry is a running OCI registry.
type Registry struct {
	// Host is HOST:PORT, e.g. 127.0.0.1:41234.
	Host string
	// PlainHTTP is true when the registry speaks HTTP, not HTTPS.
	PlainHTTP bool
	// CAFile verifies the registry's TLS certificate (TLS registries only).
	CAFile string
	// Username and Password are set when the registry requires basic auth.
	Username, Password string
	// AuthFile is a docker/podman auth file holding the credentials (auth only).
	AuthFile string
	// Dir is where the registry stores blobs (docker-registry only).
	Dir  string
	proc *Process
	stop func()
}

// Ref returns HOST:PORT/repo:tag.
func (r *Registry) Ref(repo, tag string) string { return r.Host + "/" + repo + ":" + tag }

// Output is what an out-of-process registry printed so far (its access log
// with DockerRegistryOptions.AccessLog).
func (r *Registry) Output() string {
	if r.proc == nil {
		return ""
	}
	return r.proc.Output()
}

// Stop stops an out-of-process registry (no-op in-process).
func (r *Registry) Stop() {
	if r.proc != nil {
		r.proc.Stop(10 * time.Second)
	}
	if r.stop != nil {
		r.stop()
	}
}

// StartInProcessRegistry serves olareg (in memory, OCI 1.1 with referrers) over
// plain HTTP on loopback; stopped when t ends.
func StartInProcessRegistry(t testing.TB) *Registry {
	t.Helper()
	r, err := startOlareg()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// startOlareg serves olareg in memory over plain HTTP on loopback until Stop.
func startOlareg() (*Registry, error) {
	reg := olareg.New(config.Config{Storage: config.ConfigStorage{StoreType: config.StoreMem}})
	srv := httptest.NewServer(reg)
	return &Registry{Host: srv.Listener.Addr().String(), PlainHTTP: true, stop: func() {
		srv.Close()
		_ = reg.Close()
	}}, nil
}

// DockerRegistryOptions selects TLS and basic auth for Debian's docker-registry.
type DockerRegistryOptions struct {
	TLS  bool
	Auth bool
	// AccessLog has the registry log every request (Output returns it):
	// method, path, status and bytes sent, in the combined log format.
	AccessLog bool
	// IP is the address to listen on (127.0.0.1); NodeIP makes it
	// reachable from the test cluster's pods too.
	IP string
}

// StartDockerRegistry runs Debian's docker-registry (distribution 2.8) on a free
// loopback port with filesystem storage, optionally with TLS (a fresh CA) and
// htpasswd basic auth; stopped when t ends.
func StartDockerRegistry(t testing.TB, opts DockerRegistryOptions) *Registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		Unavailable(t, "docker-registry (Debian package docker-registry)", err)
	}
	dir := t.TempDir()
	ip := opts.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	r := &Registry{Host: fmt.Sprintf("%s:%d", ip, FreePort(t)), PlainHTTP: !opts.TLS, Dir: filepath.Join(dir, "storage")}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: %t\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", !opts.AccessLog, r.Dir, r.Host)
	var certs *CertPair
	if opts.TLS {
		certs = NewCertPair(t, dir)
		r.CAFile = certs.CAFile
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", certs.CertFile, certs.KeyFile)
	}
	if opts.Auth {
		r.Username, r.Password = "kat", "s3cret-"+randHex(4)
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: kat\n    path: %s\n", htpasswd)
		r.AuthFile = filepath.Join(dir, "auth.json")
		WriteAuthFile(t, r.AuthFile, r.Host, r.Username, r.Password)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	p, err := StartProcess("docker-registry", cmd)
	if err != nil {
		Unavailable(t, "docker-registry", err)
	}
	r.proc = p
	t.Cleanup(r.Stop)
	client := &http.Client{Timeout: 2 * time.Second}
	scheme := "http"
	if opts.TLS {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certs.CAPEM)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		scheme = "https"
	}
	err = waitFor(p, 20*time.Second, func() error {
		resp, err := client.Get(scheme + "://" + r.Host + "/v2/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		// 200 without auth, 401 with: either way the registry answers.
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("docker-registry: %v", err)
	}
	return r
}

// WriteAuthFile writes a docker/podman auth file with one registry's credentials.
func WriteAuthFile(t testing.TB, path, host, user, pass string) {
	t.Helper()
	cfg := map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))},
	}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
