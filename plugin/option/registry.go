package option

import (
	"github.com/spf13/pflag"
)

// Registry holds the flags of every registry-facing command, defined once here so
// each means the same everywhere. Kubernetes' own TLS flags (--insecure-skip-tls-verify,
// --certificate-authority) keep their kubectl meaning; the registry's are separate.
type Registry struct {
	// ConfigFile is a docker/podman auth file; empty means the usual places
	// (REGISTRY_AUTH_FILE, podman's auth.json, ~/.docker/config.json).
	ConfigFile string
	// CAFile adds a CA bundle that registry certificates are verified against.
	CAFile string
	// PlainHTTP talks HTTP instead of HTTPS.
	PlainHTTP bool
	// InsecureSkipTLSVerify does not verify the registry's certificate.
	InsecureSkipTLSVerify bool
}

// AddFlags adds the registry flags.
func (r *Registry) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.ConfigFile, "registry-config", "", "Registry auth file (docker config.json or podman auth.json); default: REGISTRY_AUTH_FILE, then podman's and docker's usual files")
	fs.StringVar(&r.CAFile, "ca-file", "", "CA bundle (PEM) to verify the registry's TLS certificate")
	fs.BoolVar(&r.PlainHTTP, "plain-http", false, "Use plain HTTP, not HTTPS, to reach the registry")
	fs.BoolVar(&r.InsecureSkipTLSVerify, "registry-insecure-skip-tls-verify", false, "Do not verify the registry's TLS certificate (insecure)")
}
