package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// AuthFileEnv names the auth file to use instead of the default ones, as for
// podman, skopeo and buildah.
const AuthFileEnv = "REGISTRY_AUTH_FILE"

// AuthFiles lists the auth files read for credentials, in order. explicit
// (--registry-config) wins, then REGISTRY_AUTH_FILE; either is then the only
// file. Otherwise the list is podman's and docker's default files (see the
// package documentation); they need not exist.
func AuthFiles(explicit string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	if f := os.Getenv(AuthFileEnv); f != "" {
		return []string{f}
	}
	var files []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	} else if runtime.GOOS == "linux" {
		files = append(files, fmt.Sprintf("/run/containers/%d/auth.json", os.Getuid()))
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

// namedStore is one source of credentials and what to call it in errors.
type namedStore struct {
	name  string
	store credentials.Store
}

// Credentials is the credential chain of AuthFiles, optionally followed by
// a fallback docker config (a cluster's pull secret).
type Credentials struct {
	stores []namedStore
}

// NewCredentials reads the auth files of AuthFiles(explicit). An explicit
// file must exist; default files (and REGISTRY_AUTH_FILE, as podman treats
// it) that do not exist are skipped. A file that exists but is not a docker
// config JSON is an error naming it.
func NewCredentials(explicit string) (*Credentials, error) {
	c := &Credentials{}
	for _, p := range AuthFiles(explicit) {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && explicit == "":
			continue
		case err != nil:
			return nil, fmt.Errorf("registry auth file: %w (give an existing docker config.json or podman auth.json)", err)
		case st.IsDir():
			return nil, fmt.Errorf("registry auth file %s is a directory, not a docker config.json or podman auth.json", p)
		}
		s, err := credentials.NewStore(p, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("registry auth file %s is not a docker config.json or podman auth.json: %w", p, Redact(err))
		}
		c.stores = append(c.stores, namedStore{name: "registry auth file " + p, store: s})
	}
	return c, nil
}

// AddDockerConfig appends a docker config JSON (a pull secret's
// .dockerconfigjson) after the auth files: it is consulted for a host that no
// file has credentials for. name says what it is in errors.
func (c *Credentials) AddDockerConfig(name string, config []byte) error {
	s, err := credentials.NewMemoryStoreFromDockerConfig(config)
	if err != nil {
		return fmt.Errorf("%s is not a valid docker config JSON", name)
	}
	c.stores = append(c.stores, namedStore{name: name, store: s})
	return nil
}

// Get returns the credential for host (HOST[:PORT]) from the first source
// that has one; the empty credential when none has. A source that fails
// (a credential helper that cannot run) does not hide the ones after it;
// its error is returned only when no source has a credential.
func (c *Credentials) Get(ctx context.Context, host string) (auth.Credential, error) {
	addr := credentials.ServerAddressFromHostname(host)
	if addr == "" {
		return auth.EmptyCredential, nil
	}
	var firstErr error
	for _, s := range c.stores {
		cred, err := s.store.Get(ctx, addr)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: credentials for %s: %w", s.name, host, Redact(err))
			}
			continue
		}
		if cred != auth.EmptyCredential {
			remember(cred)
			return cred, nil
		}
	}
	if firstErr != nil {
		return auth.EmptyCredential, firstErr
	}
	return auth.EmptyCredential, nil
}

// Credential returns the credential for host through AuthFiles(authFile),
// for a caller that hands it on (migrate puts it into the restore Job's pull
// Secret).
func Credential(ctx context.Context, authFile, host string) (auth.Credential, error) {
	c, err := NewCredentials(authFile)
	if err != nil {
		return auth.EmptyCredential, err
	}
	return c.Get(ctx, host)
}

// DockerConfigFor returns a docker config JSON holding only host's
// credential, found through AuthFiles(authFile), or nil when there is none:
// the pull secret of a Job that reads from host, with no other registry's
// credentials in it.
func DockerConfigFor(ctx context.Context, authFile, host string) ([]byte, error) {
	if host == "" {
		return nil, nil
	}
	cred, err := Credential(ctx, authFile, host)
	if err != nil || cred == auth.EmptyCredential {
		return nil, err
	}
	// The fields of docker's AuthConfig (docker/cli cli/config/types).
	entry := map[string]string{}
	if cred.Username != "" || cred.Password != "" {
		entry["auth"] = base64.StdEncoding.EncodeToString([]byte(cred.Username + ":" + cred.Password))
	}
	if cred.RefreshToken != "" {
		entry["identitytoken"] = cred.RefreshToken
	}
	if cred.AccessToken != "" {
		entry["registrytoken"] = cred.AccessToken
	}
	return json.Marshal(map[string]any{"auths": map[string]any{host: entry}})
}
