// Package release reads what a node image needs from an OpenShift release
// payload: the image-references of the release image (the digests of the
// agent-installer images) and the live ISO inside machine-os-images. It is a
// small pull-only registry client over oras-go that authenticates with the
// cluster's pull secret (plus local auth files) and tries the cluster's
// digest mirrors before the source.
package release

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
)

// Options configure the client.
type Options struct {
	// PullSecret is the cluster's docker config JSON.
	PullSecret []byte
	// AuthFile is a local docker/podman auth file whose entries win over the
	// pull secret's; empty means REGISTRY_AUTH_FILE, then podman's and
	// docker's usual files, when present.
	AuthFile string
	// Mirrors are the cluster's IDMS/ICSP entries, tried before the source for
	// digest references.
	Mirrors []clusterinfo.ImageDigestSource
	// PlainHTTP talks HTTP to every registry; CAFile adds trusted CAs;
	// InsecureSkipTLSVerify disables verification.
	PlainHTTP             bool
	CAFile                string
	InsecureSkipTLSVerify bool
}

// Client pulls from release payload registries.
type Client struct {
	opts Options
	http *http.Client
	cred auth.CredentialFunc
	// Log receives one line per mirror that failed before another worked.
	Log func(format string, args ...any)
}

// New builds a client. Credentials never appear in its errors.
func New(o Options) (*Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.CAFile != "" || o.InsecureSkipTLSVerify {
		cfg := &tls.Config{InsecureSkipVerify: o.InsecureSkipTLSVerify} //nolint:gosec // the user asked for it
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("registry CA file: %w", err)
			}
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("registry CA file %s holds no PEM certificate", o.CAFile)
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	var stores []credentials.Store
	if path := localAuthFile(o.AuthFile); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("registry auth file: %w", err)
		}
		s, err := credentials.NewMemoryStoreFromDockerConfig(b)
		if err != nil {
			return nil, fmt.Errorf("registry auth file %s is not a docker config: %w", path, err)
		}
		stores = append(stores, s)
	}
	if len(o.PullSecret) > 0 {
		s, err := credentials.NewMemoryStoreFromDockerConfig(o.PullSecret)
		if err != nil {
			return nil, errors.New("the cluster's pull secret is not a valid docker config JSON")
		}
		stores = append(stores, s)
	}
	c := &Client{opts: o, http: &http.Client{Transport: retry.NewTransport(tr)}, Log: func(string, ...any) {}}
	c.cred = func(ctx context.Context, host string) (auth.Credential, error) {
		for _, s := range stores {
			cr, err := s.Get(ctx, host)
			if err == nil && cr != auth.EmptyCredential {
				return cr, nil
			}
		}
		return auth.EmptyCredential, nil
	}
	return c, nil
}

func localAuthFile(explicit string) string {
	if explicit != "" {
		return explicit
	}
	candidates := []string{os.Getenv("REGISTRY_AUTH_FILE")}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		candidates = append(candidates, filepath.Join(d, "containers", "auth.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".config", "containers", "auth.json"), filepath.Join(home, ".docker", "config.json"))
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

func (c *Client) repository(ref registry.Reference) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = c.opts.PlainHTTP
	repo.Client = &auth.Client{Client: c.http, Credential: c.cred, Cache: auth.NewCache()}
	return repo, nil
}

// Candidates are the references to try for ref, mirrors first. IDMS/ICSP
// mirrors apply only to digest references, as in the cluster's
// registries.conf (mirror-by-digest-only).
func Candidates(ref string, mirrors []clusterinfo.ImageDigestSource) []string {
	var out []string
	name, digest, ok := strings.Cut(ref, "@")
	if ok {
		for _, m := range mirrors {
			if rest, ok := matchSource(name, m.Source); ok {
				for _, mirror := range m.Mirrors {
					out = append(out, mirror+rest+"@"+digest)
				}
			}
		}
	}
	return append(out, ref)
}

// matchSource reports whether repository name is source or under it, and the
// remainder to append to a mirror.
func matchSource(name, source string) (string, bool) {
	if name == source {
		return "", true
	}
	if strings.HasPrefix(name, source+"/") {
		return name[len(source):], true
	}
	return "", false
}
