package auth

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// Claim is the id claim of a local-auth token; the service accepts a token
// whose claim names an existing row (pkg/auth/local_authenticator.go).
type Claim string

// Claims assisted-service's local authenticator understands.
const (
	ClaimClusterID  Claim = "cluster_id"
	ClaimInfraEnvID Claim = "infra_env_id"
)

// Token is a signed JWT. It prints as redacted; Reveal returns the value for
// the one place that must write it (a Secret, a request header).
type Token struct{ value string }

func (t Token) String() string   { return "<redacted token>" }
func (t Token) GoString() string { return t.String() }

// MarshalJSON keeps tokens out of -o json output and reports.
func (t Token) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// Reveal returns the token itself.
func (t Token) Reveal() string { return t.value }

// MintOptions shape a token.
type MintOptions struct {
	// TTL sets an exp claim; zero means no exp, which is what ABI's install
	// workflow uses (the service checks exp only when present).
	TTL time.Duration
	// Now is the issue time (default time.Now).
	Now func() time.Time
}

var es256Header = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT"}`))

// Mint signs an ES256 JWT with claim=id and iat (and exp with a TTL), the
// format of assisted-service's gencrypto.LocalJWTForKey.
func (k *KeyPair) Mint(claim Claim, id string, o MintOptions) (Token, error) {
	if id == "" {
		return Token{}, fmt.Errorf("mint token: empty %s", claim)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	t := now()
	claims := map[string]any{string(claim): id, "iat": t.Unix()}
	if o.TTL > 0 {
		claims["exp"] = t.Add(o.TTL).Unix()
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return Token{}, err
	}
	signing := es256Header + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, sum[:])
	if err != nil {
		return Token{}, err
	}
	// JWS ES256 signatures are R || S, each left-padded to 32 bytes.
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return Token{value: signing + "." + base64.RawURLEncoding.EncodeToString(sig)}, nil
}

// MintClusterToken is Mint with the cluster_id claim: the token the
// assisted-installer-controller and agents present to cluster 0's service.
func (k *KeyPair) MintClusterToken(clusterID string, o MintOptions) (Token, error) {
	return k.Mint(ClaimClusterID, clusterID, o)
}

// VerifyToken checks an ES256 token against a PEM public key (signature, alg,
// exp when present, at time now) and returns its claims. Errors never quote
// the token.
func VerifyToken(publicPEM []byte, token string, now time.Time) (map[string]any, error) {
	pub, err := parsePublicKey(publicPEM)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("token: not a JWS compact serialization")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, errors.New("token: bad header encoding")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(hb, &hdr); err != nil || hdr.Alg != "ES256" {
		return nil, errors.New("token: algorithm is not ES256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("token: bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, sum[:], r, s) {
		return nil, errors.New("token: signature does not verify")
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("token: bad payload encoding")
	}
	var claims map[string]any
	if err := json.Unmarshal(pb, &claims); err != nil {
		return nil, errors.New("token: payload is not a JSON object")
	}
	if exp, ok := claims["exp"].(float64); ok && now.Unix() >= int64(exp) {
		return nil, errors.New("token: expired")
	}
	return claims, nil
}

// URLSigner signs status URLs for cluster 0's service the way it signs its
// own (gencrypto.SignURL: an api_key query parameter). It satisfies
// restore/resources.URLSigner.
type URLSigner struct {
	Key  *KeyPair
	Opts MintOptions
}

// SignURL sets api_key to a token with the cluster_id claim, or infra_env_id
// when the URL names no cluster.
func (s URLSigner) SignURL(raw, clusterID, infraEnvID string) (string, error) {
	claim, id := ClaimClusterID, clusterID
	if id == "" {
		claim, id = ClaimInfraEnvID, infraEnvID
	}
	if id == "" {
		return "", errors.New("sign URL: it names no cluster or infra-env")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("sign URL: does not parse")
	}
	tok, err := s.Key.Mint(claim, id, s.Opts)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("api_key", tok.Reveal())
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// LocalAuthClaim checks a token the way cluster 0's assisted-service does with
// AUTH_TYPE=local (openshift/assisted-service pkg/auth/local_authenticator.go
// AuthAgentAuth and validateToken: golang-jwt v4, ES256 only, exp/iat/nbf when
// present, then an infra_env_id or cluster_id string claim, infra_env_id
// first), against the local-auth Secret's public key. It returns the claim and
// id; the service also requires a database row with that id, which is not
// checked here. ABI's agent-installer-local tokens ({"auth_scheme": "agentAuth"}
// and the like, release-4.18+ pkg/auth/agent_local_authz_handler.go) fail it
// whatever the key.
func LocalAuthClaim(publicPEM []byte, token string, now time.Time) (Claim, string, error) {
	claims, err := VerifyToken(publicPEM, token, now)
	if err != nil {
		return "", "", err
	}
	unix := now.Unix()
	if iat, ok := claims["iat"].(float64); ok && int64(iat) > unix {
		return "", "", errors.New("token: used before issued")
	}
	if nbf, ok := claims["nbf"].(float64); ok && int64(nbf) > unix {
		return "", "", errors.New("token: not valid yet")
	}
	if id, ok := claims[string(ClaimInfraEnvID)].(string); ok {
		return ClaimInfraEnvID, id, nil
	}
	if id, ok := claims[string(ClaimClusterID)].(string); ok {
		return ClaimClusterID, id, nil
	}
	return "", "", errors.New("token: no infra_env_id or cluster_id claim (cluster 0's local auth accepts no other)")
}
