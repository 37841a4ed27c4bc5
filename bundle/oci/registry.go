package oci

import (
	"errors"
	"io/fs"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
)

// RegistryOptions configure how a registry is reached. All but ChunkSize are
// those of the registry package (one transport, auth-file order and
// redaction for every registry client of this program).
type RegistryOptions struct {
	// AuthFile is a docker config.json or podman auth.json, the only one
	// read. Empty means REGISTRY_AUTH_FILE alone when set, else
	// $XDG_RUNTIME_DIR/containers/auth.json, $XDG_CONFIG_HOME/containers/auth.json
	// (~/.config/containers/auth.json) and $DOCKER_CONFIG/config.json
	// (~/.docker/config.json), the first with credentials for the host
	// winning (registry.AuthFiles).
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

// Registry returns the registry package's options.
func (o RegistryOptions) Registry() registry.Options {
	return registry.Options{AuthFile: o.AuthFile, CAFile: o.CAFile, PlainHTTP: o.PlainHTTP,
		InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, UserAgent: o.UserAgent}
}

// newRepository returns a client for ref's repository with auth, TLS,
// retries (oras-go's retry transport: 408, 429, 5xx, connection resets, with
// backoff) and redacted transport errors, from the registry package.
func newRepository(ref Reference, opts RegistryOptions) (*remote.Repository, error) {
	c, err := registry.New(opts.Registry())
	if err != nil {
		return nil, err
	}
	return c.Repository(ref.Registry, ref.Repository), nil
}

// redact hides credentials, tokens and upload locations in a registry error
// (registry.Redact).
func redact(err error) error { return registry.Redact(err) }

// IsNotFound reports whether err says the manifest, tag or blob does not exist.
func IsNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errdef.ErrNotFound)
}
