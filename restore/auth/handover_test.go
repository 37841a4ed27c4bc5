package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// nodeZeroKey is a key pair as node 0's service holds it with AUTH_TYPE=local
// (the operator's assisted-servicelocal-auth Secret: SEC 1 "EC PRIVATE KEY"
// and PKIX "EC PUBLIC KEY" PEM, internal/gencrypto/keys.go ECDSAKeyPairPEM).
func nodeZeroKey(t *testing.T) (*ecdsa.PrivateKey, []byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pub})
}

// serviceAccepts applies cluster 0's rules with the library the service uses
// (openshift/assisted-service pkg/auth/local_authenticator.go: validateToken
// parses with golang-jwt v4, ValidMethods [ES256], the key from
// jwt.ParseECPublicKeyFromPEM(EC_PUBLIC_KEY_PEM); AuthAgentAuth then wants an
// infra_env_id or cluster_id string claim).
func serviceAccepts(publicPEM []byte, token string) (string, error) {
	pub, err := jwt.ParseECPublicKeyFromPEM(publicPEM)
	if err != nil {
		return "", err
	}
	parser := &jwt.Parser{ValidMethods: []string{jwt.SigningMethodES256.Alg()}}
	parsed, err := parser.Parse(token, func(*jwt.Token) (interface{}, error) { return pub, nil })
	if err != nil {
		return "", err
	}
	claims := parsed.Claims.(jwt.MapClaims)
	if id, ok := claims["infra_env_id"].(string); ok {
		return "infra_env_id=" + id, nil
	}
	if id, ok := claims["cluster_id"].(string); ok {
		return "cluster_id=" + id, nil
	}
	return "", errTestClaims
}

var errTestClaims = &claimsErr{}

type claimsErr struct{}

func (*claimsErr) Error() string { return "claims are incorrectly formatted" }

// Node 0's tokens verify on cluster 0 when the bundle carried node 0's key
// and the restore made it the local-auth Secret's.
func TestCarriedKeyKeepsNodeZeroTokens(t *testing.T) {
	ctx := context.Background()
	priv, privPEM, pubPEM := nodeZeroKey(t)
	carried, err := KeyPairFromSecret(map[string][]byte{KeyECPrivate: privPEM, KeyECPublic: pubPEM})
	if err != nil {
		t.Fatal(err)
	}
	// Tokens node 0's service issued: gencrypto.LocalJWTForKey signs
	// {<cluster_id|infra_env_id>: id} with ES256 and nothing else
	// (internal/gencrypto/token.go); the agents', the ISO URLs' and the
	// installer-controller's tokens are all of this form.
	mint := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clusterTok := mint(jwt.MapClaims{"cluster_id": "b53c1137-37e7-4088-9787-9c892faaf8a9"})
	infraTok := mint(jwt.MapClaims{"infra_env_id": "0b5d8c1a-3f4e-4f5a-9c1d-2e3f4a5b6c7d"})
	// ABI's agent-installer-local tokens: {"auth_scheme": "agentAuth"}, the
	// claim openshift/assisted-service release-4.18..4.20
	// pkg/auth/agent_local_authz_handler.go agentInstallerAuthorizer reads
	// (the rehearsal's node 0 ran on them; cluster 0 answered 401).
	subTok := mint(jwt.MapClaims{"auth_scheme": "agentAuth"})

	c := fake.NewClientset()
	k, from, err := EnsureLocalAuthSecretWith(ctx, c, ns, carried)
	if err != nil || from != KeyFromNodeZero || !k.Equal(carried) {
		t.Fatalf("ensure: from=%s err=%v", from, err)
	}
	s, _ := c.CoreV1().Secrets(ns).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
	restoredPub := s.Data[KeyECPublic]
	for tok, want := range map[string]string{clusterTok: "cluster_id=b53c1137-37e7-4088-9787-9c892faaf8a9", infraTok: "infra_env_id=0b5d8c1a-3f4e-4f5a-9c1d-2e3f4a5b6c7d"} {
		got, err := serviceAccepts(restoredPub, tok)
		if err != nil || got != want {
			t.Errorf("node-0 token on cluster 0: %q %v, want %q", got, err, want)
		}
		if claim, id, err := LocalAuthClaim(restoredPub, tok, time.Now()); err != nil || string(claim)+"="+id != want {
			t.Errorf("LocalAuthClaim = %s %s %v, want %s", claim, id, err, want)
		}
	}
	// A sub-only token verifies its signature but has no claim local auth takes.
	if _, err := serviceAccepts(restoredPub, subTok); err != errTestClaims {
		t.Errorf("sub-only token: err = %v, want the claims error", err)
	}
	if _, _, err := LocalAuthClaim(restoredPub, subTok, time.Now()); err == nil || !strings.Contains(err.Error(), "no infra_env_id or cluster_id") {
		t.Errorf("LocalAuthClaim(sub-only) err = %v", err)
	}
	// Cluster 0's own tokens (the restore's URL signer) verify too.
	own, _ := k.MintClusterToken("b53c1137-37e7-4088-9787-9c892faaf8a9", MintOptions{})
	if _, err := serviceAccepts(restoredPub, own.Reveal()); err != nil {
		t.Errorf("cluster 0's own token: %v", err)
	}

	// A rerun finds node 0's key in place and changes nothing.
	if _, from, err := EnsureLocalAuthSecretWith(ctx, c, ns, carried); err != nil || from != KeyNodeZeroMatch {
		t.Fatalf("rerun: from=%s err=%v", from, err)
	}

	// Without a carried key the restore generates one, and node 0's tokens
	// fail exactly as the issue saw ("crypto/ecdsa: verification error").
	c2 := fake.NewClientset()
	if _, from, err := EnsureLocalAuthSecretWith(ctx, c2, ns, nil); err != nil || from != KeyGenerated {
		t.Fatalf("generate: from=%s err=%v", from, err)
	}
	s2, _ := c2.CoreV1().Secrets(ns).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
	if _, err := serviceAccepts(s2.Data[KeyECPublic], clusterTok); err == nil || !strings.Contains(err.Error(), "verification error") {
		t.Errorf("node-0 token against a new key: err = %v", err)
	}

	// A Secret already holding another key is kept (its tokens may be in use);
	// the caller reports that node 0's tokens will not verify.
	if _, from, err := EnsureLocalAuthSecretWith(ctx, c2, ns, carried); err != nil || from != KeyFromCluster {
		t.Fatalf("existing other key: from=%s err=%v", from, err)
	}
	s3, _ := c2.CoreV1().Secrets(ns).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
	if string(s3.Data[KeyECPublic]) != string(s2.Data[KeyECPublic]) {
		t.Error("the existing key was replaced")
	}
}
