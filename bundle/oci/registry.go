package oci

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// RegistryOptions configure how a registry is reached.
type RegistryOptions struct {
	// AuthFile is a docker config.json or podman auth.json. Empty means the
	// usual places, first found wins per registry: REGISTRY_AUTH_FILE,
	// $XDG_RUNTIME_DIR/containers/auth.json, ~/.config/containers/auth.json,
	// $DOCKER_CONFIG/config.json or ~/.docker/config.json.
	AuthFile string
	// CAFile is a PEM bundle added to the system roots.
	CAFile string
	// PlainHTTP talks HTTP instead of HTTPS.
	PlainHTTP bool
	// InsecureSkipTLSVerify skips the certificate check (insecure).
	InsecureSkipTLSVerify bool
	// UserAgent is sent with every request.
	UserAgent string
	// ChunkSize is the size of one upload chunk of a streamed blob; 0 means
	// DefaultChunkSize. Memory use is about twice this value per upload.
	ChunkSize int
}

// newRepository returns a client for ref's repository with auth, TLS and
// retries (oras-go's retry transport: 408, 429, 5xx, connection resets, with
// backoff) configured from opts.
func newRepository(ref Reference, opts RegistryOptions) (*remote.Repository, error) {
	creds, err := credentialStore(opts.AuthFile)
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig, err = tlsConfig(opts)
	if err != nil {
		return nil, err
	}
	base.ResponseHeaderTimeout = 5 * time.Minute
	client := &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(base)},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(creds),
	}
	if opts.UserAgent != "" {
		client.SetUserAgent(opts.UserAgent)
	}
	repo := &remote.Repository{
		Client:    client,
		Reference: registry.Reference{Registry: ref.Registry, Repository: ref.Repository},
		PlainHTTP: opts.PlainHTTP,
	}
	return repo, nil
}

func tlsConfig(opts RegistryOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.InsecureSkipTLSVerify} //nolint:gosec // the user asked for it
	if opts.CAFile == "" {
		return cfg, nil
	}
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
	return cfg, nil
}

// credentialStore reads the auth file the user named, or every usual one that
// exists (REGISTRY_AUTH_FILE first, then podman's, then docker's).
func credentialStore(authFile string) (credentials.Store, error) {
	if authFile != "" {
		if _, err := os.Stat(authFile); err != nil {
			return nil, fmt.Errorf("registry auth file: %w", err)
		}
		s, err := credentials.NewStore(authFile, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("registry auth file %s: %w", authFile, err)
		}
		return s, nil
	}
	var stores []credentials.Store
	for _, p := range DefaultAuthFiles() {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		s, err := credentials.NewStore(p, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("registry auth file %s: %w", p, err)
		}
		stores = append(stores, s)
	}
	if len(stores) == 0 {
		return credentials.NewMemoryStore(), nil
	}
	return credentials.NewStoreWithFallbacks(stores[0], stores[1:]...), nil
}

// DefaultAuthFiles lists the auth files looked at when none is given, in order.
func DefaultAuthFiles() []string {
	var files []string
	if f := os.Getenv("REGISTRY_AUTH_FILE"); f != "" {
		files = append(files, f)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	}
	home, _ := os.UserHomeDir()
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	} else if home != "" {
		files = append(files, filepath.Join(home, ".config", "containers", "auth.json"))
	}
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		files = append(files, filepath.Join(d, "config.json"))
	} else if home != "" {
		files = append(files, filepath.Join(home, ".docker", "config.json"))
	}
	return files
}

// IsNotFound reports whether err says the manifest, tag or blob does not exist.
func IsNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errdef.ErrNotFound)
}
