package option

import (
	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
)

// RegistryConfigHelp is the help of --registry-config: the auth-file order of
// bundle/registry.AuthFiles, which every registry client (bundle, restore,
// add-nodes, migrate) follows.
const RegistryConfigHelp = "Registry auth file (docker config.json or podman auth.json), the only one read. " +
	"Default: $REGISTRY_AUTH_FILE alone when set; else, per registry, the first of " +
	"$XDG_RUNTIME_DIR/containers/auth.json (/run/containers/$UID/auth.json without XDG_RUNTIME_DIR), " +
	"$XDG_CONFIG_HOME/containers/auth.json (~/.config/containers/auth.json), " +
	"$DOCKER_CONFIG/config.json (~/.docker/config.json) that has credentials for it, as podman and skopeo do"

// Registry holds the flags of every registry-facing command, defined once here so
// each means the same everywhere. Kubernetes' own TLS flags (--insecure-skip-tls-verify,
// --certificate-authority) keep their kubectl meaning; the registry's are separate.
type Registry struct {
	// ConfigFile is a docker/podman auth file, the only one read; empty
	// means the search order of registry.AuthFiles (RegistryConfigHelp).
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
	fs.StringVar(&r.ConfigFile, "registry-config", "", RegistryConfigHelp)
	fs.StringVar(&r.CAFile, "ca-file", "", "CA bundle (PEM) to verify the registry's TLS certificate")
	fs.BoolVar(&r.PlainHTTP, "plain-http", false, "Use plain HTTP, not HTTPS, to reach the registry")
	fs.BoolVar(&r.InsecureSkipTLSVerify, "registry-insecure-skip-tls-verify", false, "Do not verify the registry's TLS certificate (insecure)")
}

// Options turns the flags into the registry layer's options.
func (r Registry) Options(userAgent string) registry.Options {
	return registry.Options{AuthFile: r.ConfigFile, CAFile: r.CAFile, PlainHTTP: r.PlainHTTP,
		InsecureSkipTLSVerify: r.InsecureSkipTLSVerify, UserAgent: userAgent}
}
