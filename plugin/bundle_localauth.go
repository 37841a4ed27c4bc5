package plugin

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
)

// The variables of assisted-service's env file that hold its token key
// (pkg/auth/authenticator.go Config.ECPublicKeyPEM, internal/gencrypto/token.go
// LocalJWT). An older agent-based installer wrote both into node 0's
// assisted-service.env, with AUTH_TYPE=none and the agents' AGENT_AUTH_TOKEN,
// an ES256 {infra_env_id} JWT signed with that key (openshift/installer commit
// ecc6a712, data/data/agent/files/usr/local/share/assisted-service/
// assisted-service.env.template, and pkg/asset/agent/image/ignition.go, which
// fills PrivateKeyPEM, PublicKeyPEM and Token from gencrypto.AuthConfig). The
// agent-installer-local templates after it pass EC_PUBLIC_KEY_PEM alone.
const (
	envECPrivateKey = "EC_PRIVATE_KEY_PEM"
	envECPublicKey  = "EC_PUBLIC_KEY_PEM"
)

// envKeyPair reads node 0's token key pair from its assisted-service env file:
// nil without EC_PRIVATE_KEY_PEM (nothing to carry: an env file with only the
// public key, AUTH_TYPE=agent-installer-local, cannot make cluster 0 sign what
// it verifies). A value is PEM with its newlines escaped as \n, or PEM in
// base64 (the installer writes keys base64 to keep them on one line: see
// pkg/auth/agent_local_authenticator.go NewAgentLocalAuthenticator). Errors
// name the variable, never its value.
func envKeyPair(path string) (*auth.KeyPair, error) {
	env, err := option.ReadEnvFile(path)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(env[envECPrivateKey]) == "" {
		return nil, nil
	}
	priv, err := envPEM(env[envECPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %s %w", path, envECPrivateKey, err)
	}
	if strings.TrimSpace(env[envECPublicKey]) == "" {
		k, err := auth.ParsePrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, envECPrivateKey, err)
		}
		return k, nil
	}
	pub, err := envPEM(env[envECPublicKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %s %w", path, envECPublicKey, err)
	}
	k, err := auth.ParseKeyPair(priv, pub)
	if err != nil {
		return nil, fmt.Errorf("%s: %s and %s: %w", path, envECPrivateKey, envECPublicKey, err)
	}
	return k, nil
}

// envPEM decodes one env value into PEM.
func envPEM(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "-----BEGIN ") {
		return []byte(strings.ReplaceAll(v, `\n`, "\n")), nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, errors.New("is neither PEM nor base64-encoded PEM")
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b)), "-----BEGIN ") {
		return nil, errors.New("is base64 but does not hold PEM")
	}
	return b, nil
}

// carryEnvKey adds node 0's token key pair from --db-env-file to the
// resources layer when the bundle is encrypted, so that the restore makes it
// cluster 0's local-auth key. It returns a line for stderr ("" when the env
// file holds no private key). An unencrypted bundle never carries it.
func (in *bundleInput) carryEnvKey(envFile string, encrypted bool) (string, error) {
	if envFile == "" {
		return "", nil
	}
	k, err := envKeyPair(envFile)
	if err != nil || k == nil {
		return "", err
	}
	if !encrypted {
		return fmt.Sprintf("warning: %s holds node 0's token key (%s), but an unencrypted bundle never carries it: cluster 0's service will not accept the tokens node 0 issued; give --recipient to carry it", envFile, envECPrivateKey), nil
	}
	priv, pub, err := k.PEM()
	if err != nil {
		return "", err
	}
	secret := resources.LocalAuthSecret(priv, pub)
	switch src := in.create.Resources.(type) {
	case nil:
		in.create.Resources = &resources.LocalAuthSource{Secret: secret}
	case *resources.DirSource:
		src.LocalAuth = secret
	default:
		// --resources cluster exports the operator's own Secret instead.
		return fmt.Sprintf("note: %s holds a token key, but the bundle exports node 0's %s Secret from its API: the exported one is carried", envFile, resources.LocalAuthSecretName), nil
	}
	return fmt.Sprintf("the bundle carries node 0's token key from %s (%s), encrypted: cluster 0's service will accept the tokens node 0 issued", envFile, envECPrivateKey), nil
}
