// Package registry is the one way this program reaches OCI registries: the
// bundle transport (bundle/oci), the release payload reader of day-2 node
// images (day2/release) and migrate's pull credentials for the restore Job
// all use it, so that an auth file, a CA file or --plain-http means the same
// everywhere.
//
// It owns:
//
//   - one HTTP transport: TLS 1.2 at least, an extra CA bundle added to the
//     system roots, the proxy from HTTP_PROXY/HTTPS_PROXY/NO_PROXY, and
//     oras-go's retries; skipping certificate checks and plain HTTP only when
//     asked for (Options.InsecureSkipTLSVerify, Options.PlainHTTP);
//   - one auth-file search order (AuthFiles), the one of podman and skopeo
//     (containers-auth.json(5) and containers/image's getAuthFilePaths): a
//     file the user names (--registry-config, else REGISTRY_AUTH_FILE) is the
//     only one read; otherwise $XDG_RUNTIME_DIR/containers/auth.json (or
//     /run/containers/$UID/auth.json when XDG_RUNTIME_DIR is unset),
//     $XDG_CONFIG_HOME/containers/auth.json (~/.config/containers/auth.json),
//     and $DOCKER_CONFIG/config.json (~/.docker/config.json) are read in that
//     order, per registry: the first file with credentials for the host wins,
//     and a host missing from one file is looked up in the next. Files are
//     parsed by oras-go's credentials package, which also runs the credential
//     helpers (credsStore, credHelpers) a docker config names. The legacy
//     ~/.dockercfg is not read;
//   - redaction: every error it returns, and every error a caller passes
//     through Redact, has URL query strings (tokens, _state), user
//     information, the session part of blob upload locations (a capability:
//     whoever holds it can write into the upload) and every credential or
//     token this process sent to a registry replaced by "<redacted>".
package registry
