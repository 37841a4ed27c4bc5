// Package release reads what a node image needs from an OpenShift release
// payload: the image-references of the release image (the digests of the
// agent-installer images) and the live ISO inside machine-os-images. It is a
// small pull-only registry client over oras-go that authenticates with the
// cluster's pull secret (plus local auth files) and tries the cluster's
// digest mirrors before the source.
package release

import (
	"strings"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	bregistry "github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
)

// Options configure the client.
type Options struct {
	// PullSecret is the cluster's docker config JSON, consulted for a
	// registry no local auth file has credentials for.
	PullSecret []byte
	// AuthFile is a local docker/podman auth file whose entries win over the
	// pull secret's; empty means the search order of the bundle registry
	// layer (bundle/registry.AuthFiles): REGISTRY_AUTH_FILE alone when set,
	// else podman's runtime and config auth.json, then docker's config.json,
	// chained per registry.
	AuthFile string
	// Mirrors are the cluster's IDMS/ICSP entries, tried before the source for
	// digest references.
	Mirrors []clusterinfo.ImageDigestSource
	// PlainHTTP talks HTTP to every registry; CAFile adds trusted CAs;
	// InsecureSkipTLSVerify disables verification.
	PlainHTTP             bool
	CAFile                string
	InsecureSkipTLSVerify bool
	// UserAgent is sent with every request; empty keeps oras-go's.
	UserAgent string
}

// Client pulls from release payload registries.
type Client struct {
	opts Options
	reg  *bregistry.Client
	// Log receives one line per mirror that failed before another worked.
	Log func(format string, args ...any)
}

// New builds a client on the bundle registry layer (one transport with a
// TLS 1.2 minimum, one auth-file order, redacted errors). Credentials never
// appear in its errors.
func New(o Options) (*Client, error) {
	creds, err := bregistry.NewCredentials(o.AuthFile)
	if err != nil {
		return nil, err
	}
	if len(o.PullSecret) > 0 {
		if err := creds.AddDockerConfig("the cluster's pull secret", o.PullSecret); err != nil {
			return nil, err
		}
	}
	reg, err := bregistry.NewWithCredentials(bregistry.Options{
		AuthFile: o.AuthFile, CAFile: o.CAFile, PlainHTTP: o.PlainHTTP,
		InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, UserAgent: o.UserAgent,
	}, creds)
	if err != nil {
		return nil, err
	}
	return &Client{opts: o, reg: reg, Log: func(string, ...any) {}}, nil
}

func (c *Client) repository(ref registry.Reference) (*remote.Repository, error) {
	if err := ref.ValidateRepository(); err != nil {
		return nil, err
	}
	return c.reg.Repository(ref.Registry, ref.Repository), nil
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
