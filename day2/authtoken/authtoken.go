// Package authtoken mints and keeps the tokens that the assisted-service on a
// booted add-nodes host accepts (ES256 JWTs valid 48 hours), stored in
// openshift-config/agent-auth-token as the installer does, and reused while
// they have more than 24 hours left, so ISOs built within a day share them.
//
// The token kinds depend on the cluster's version, because the on-host
// assisted-service is the release's own:
//
//   - 4.17 (KindSingle): one token, claims {infra_env_id, exp}. The 4.17
//     service's agent-local authenticator rejects a token without a string
//     infra_env_id claim, and takes the same token as agent and user token
//     (assisted-service release-4.17 pkg/auth/agent_local_authenticator.go).
//   - 4.18 and later (KindPerScheme): three tokens, one per security scheme
//     (agentAuth, userAuth, watcherAuth), each with claims {auth_scheme, exp}.
//     The 4.18+ authorizer answers 500 "malformed auth_scheme claim" to a
//     token without a string auth_scheme claim and 403 to a token whose
//     claim is not the scheme of the route (assisted-service release-4.18 ..
//     release-4.20 pkg/auth/agent_local_authz_handler.go).
package authtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Where the tokens live and for how long they are valid.
const (
	Namespace       = "openshift-config"
	SecretName      = "agent-auth-token"
	AgentTokenKey   = "agentAuthToken"
	UserTokenKey    = "userAuthToken"
	WatcherTokenKey = "watcherAuthToken"
	PublicKeyKey    = "authTokenPublicKey"
	Lifetime        = 48 * time.Hour
	ReuseMargin     = 24 * time.Hour
)

// TokenKey is the Secret key of the agent token (kept for callers that only
// need that one).
const TokenKey = AgentTokenKey

// The security schemes of assisted-service's swagger spec a token can carry
// in its auth_scheme claim.
const (
	SchemeAgent   = "agentAuth"
	SchemeUser    = "userAuth"
	SchemeWatcher = "watcherAuth"
)

// Kind says which tokens a cluster version's assisted-service needs.
type Kind int

// Token kinds.
const (
	// KindSingle is 4.17: one token {infra_env_id, exp} for every use.
	KindSingle Kind = iota + 1
	// KindPerScheme is 4.18+: one token per scheme, {auth_scheme, exp}.
	KindPerScheme
)

func (k Kind) String() string {
	switch k {
	case KindSingle:
		return "single"
	case KindPerScheme:
		return "per-scheme"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Set is the tokens of one ISO and the public key that verifies them. With
// KindSingle, Agent, User and Watcher are the same token.
type Set struct {
	Kind    Kind
	Agent   string
	User    string
	Watcher string
	// PublicKey is the base64 of the PEM public key (the installer's encoding,
	// which assisted-service's EC_PUBLIC_KEY_PEM takes).
	PublicKey  string
	ExpiresAt  time.Time
	InfraEnvID string
	// Reused is true when the cluster's existing tokens were kept.
	Reused bool
}

// Claims are the decoded claims of one token.
type Claims struct {
	InfraEnvID string
	AuthScheme string
	ExpiresAt  time.Time
	// Names lists every claim name, sorted, so callers can check nothing else
	// is there.
	Names []string
}

// Mint makes a new key pair and the tokens of kind for infraEnvID that expire
// Lifetime after now. The private key is dropped once they are signed.
func Mint(kind Kind, infraEnvID string, now time.Time) (*Set, error) {
	if kind != KindSingle && kind != KindPerScheme {
		return nil, fmt.Errorf("unknown token kind %v", kind)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pub})
	exp := now.UTC().Add(Lifetime).Truncate(time.Second)
	s := &Set{Kind: kind, PublicKey: base64.StdEncoding.EncodeToString(pubPEM), ExpiresAt: exp, InfraEnvID: infraEnvID}
	if kind == KindSingle {
		t, err := sign(key, map[string]any{"infra_env_id": infraEnvID, "exp": exp.Unix()})
		if err != nil {
			return nil, err
		}
		s.Agent, s.User, s.Watcher = t, t, t
		return s, nil
	}
	for _, p := range []struct {
		scheme string
		into   *string
	}{{SchemeAgent, &s.Agent}, {SchemeUser, &s.User}, {SchemeWatcher, &s.Watcher}} {
		t, err := sign(key, map[string]any{"auth_scheme": p.scheme, "exp": exp.Unix()})
		if err != nil {
			return nil, err
		}
		*p.into = t
	}
	return s, nil
}

func sign(key *ecdsa.PrivateKey, claims map[string]any) (string, error) {
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signing := b64([]byte(`{"alg":"ES256","typ":"JWT"}`)) + "." + b64(body)
	sum := sha256.Sum256([]byte(signing))
	r, sv, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return signing + "." + b64(sig), nil
}

// Verify checks token's ES256 signature against publicKey (base64 PEM) and
// returns its claims. It does not judge expiry.
func Verify(token, publicKey string) (*Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("token is not a JWT")
	}
	pemBytes, err := base64.StdEncoding.DecodeString(publicKey)
	if err != nil {
		return nil, fmt.Errorf("public key is not base64: %w", err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("public key is not PEM")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("public key is not ECDSA P-256")
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, errors.New("token header is malformed")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hdr, &h) != nil || h.Alg != "ES256" {
		return nil, errors.New("token is not signed with ES256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("token signature is malformed")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, errors.New("token signature does not verify with the stored public key")
	}
	return DecodeClaims(token)
}

// DecodeClaims decodes a JWT's claims without verifying it (for display and
// tests; Verify is the check).
func DecodeClaims(token string) (*Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("token payload is malformed")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, errors.New("token payload is not a JSON object")
	}
	c := &Claims{}
	for name := range raw {
		c.Names = append(c.Names, name)
	}
	sort.Strings(c.Names)
	var exp float64
	if v, ok := raw["exp"]; !ok || json.Unmarshal(v, &exp) != nil || exp == 0 {
		return nil, errors.New("token has no exp claim")
	}
	c.ExpiresAt = time.Unix(int64(exp), 0).UTC()
	if v, ok := raw["infra_env_id"]; ok && json.Unmarshal(v, &c.InfraEnvID) != nil {
		return nil, errors.New("token's infra_env_id claim is not a string")
	}
	if v, ok := raw["auth_scheme"]; ok && json.Unmarshal(v, &c.AuthScheme) != nil {
		return nil, errors.New("token's auth_scheme claim is not a string")
	}
	return c, nil
}

// Load checks a stored set (tokens and public key, as in the Secret) for
// kind: every token verifies with the key, has the claims kind needs and the
// same expiry. User and watcher are ignored with KindSingle.
func Load(kind Kind, agent, user, watcher, publicKey string) (*Set, error) {
	ac, err := Verify(agent, publicKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AgentTokenKey, err)
	}
	s := &Set{Kind: kind, Agent: agent, PublicKey: publicKey, ExpiresAt: ac.ExpiresAt, InfraEnvID: ac.InfraEnvID}
	switch kind {
	case KindSingle:
		if ac.InfraEnvID == "" {
			return nil, fmt.Errorf("%s has no infra_env_id claim (the 4.17 service requires it)", AgentTokenKey)
		}
		s.User, s.Watcher = agent, agent
		return s, nil
	case KindPerScheme:
		for _, p := range []struct {
			key, scheme, token string
			into               *string
		}{{AgentTokenKey, SchemeAgent, agent, &s.Agent}, {UserTokenKey, SchemeUser, user, &s.User}, {WatcherTokenKey, SchemeWatcher, watcher, &s.Watcher}} {
			if p.token == "" {
				return nil, fmt.Errorf("%s is missing", p.key)
			}
			c, err := Verify(p.token, publicKey)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.key, err)
			}
			if c.AuthScheme != p.scheme {
				return nil, fmt.Errorf("%s has auth_scheme %q, want %q", p.key, c.AuthScheme, p.scheme)
			}
			if !c.ExpiresAt.Equal(s.ExpiresAt) {
				return nil, fmt.Errorf("%s expires at %s, %s at %s", p.key, c.ExpiresAt, AgentTokenKey, s.ExpiresAt)
			}
			*p.into = p.token
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown token kind %v", kind)
}

// Usable reports whether s may be reused at now (more than ReuseMargin left).
func (s *Set) Usable(now time.Time) bool { return s.ExpiresAt.Sub(now) > ReuseMargin }

// secretData is what the Secret holds for s. A single-token set stores only
// the agent token, as the 4.17 installer does.
func (s *Set) secretData() map[string][]byte {
	d := map[string][]byte{AgentTokenKey: []byte(s.Agent), PublicKeyKey: []byte(s.PublicKey)}
	if s.Kind == KindPerScheme {
		d[UserTokenKey] = []byte(s.User)
		d[WatcherTokenKey] = []byte(s.Watcher)
	}
	return d
}

// Ensure returns the cluster's tokens when they suit kind and have more than
// 24 hours left; otherwise it mints a set for newInfraEnvID and creates or
// updates the Secret, replacing every token key so that no token signed by an
// older key is left beside the new public key.
func Ensure(ctx context.Context, kube kubernetes.Interface, kind Kind, newInfraEnvID string, now time.Time) (*Set, error) {
	secrets := kube.CoreV1().Secrets(Namespace)
	s, err := secrets.Get(ctx, SecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s = nil
	case err != nil:
		return nil, grantErr("read", err)
	}
	if s != nil {
		d := s.Data
		if t, err := Load(kind, string(d[AgentTokenKey]), string(d[UserTokenKey]), string(d[WatcherTokenKey]), string(d[PublicKeyKey])); err == nil && t.Usable(now) {
			t.Reused = true
			return t, nil
		}
	}
	t, err := Mint(kind, newInfraEnvID, now)
	if err != nil {
		return nil, err
	}
	ann := map[string]string{"expiresAt": t.ExpiresAt.Format(time.RFC3339), "updatedAt": now.UTC().Format(time.RFC3339)}
	data := t.secretData()
	if s == nil {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: Namespace, Annotations: ann}, Type: corev1.SecretTypeOpaque, Data: data}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, grantErr("create", err)
		}
		return t, nil
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	for k, v := range ann {
		s.Annotations[k] = v
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for _, k := range []string{AgentTokenKey, UserTokenKey, WatcherTokenKey, PublicKeyKey} {
		delete(s.Data, k)
	}
	for k, v := range data {
		s.Data[k] = v
	}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return nil, grantErr("update", err)
	}
	return t, nil
}

func grantErr(verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("cannot %s Secret %s/%s: forbidden: grant get, create and update on secrets in namespace %s (or build offline from a saved --cluster-profile)", verb, Namespace, SecretName, Namespace)
	}
	return fmt.Errorf("%s Secret %s/%s: %w", verb, Namespace, SecretName, err)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
