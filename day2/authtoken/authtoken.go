// Package authtoken mints and keeps the agent authentication token that the
// assisted-service on a booted node accepts (ES256 JWT, 48 hours), stored in
// openshift-config/agent-auth-token as the installer does, and reused while it
// has more than 24 hours left, so ISOs built within a day share one token.
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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Where the token lives and for how long it is valid.
const (
	Namespace    = "openshift-config"
	SecretName   = "agent-auth-token"
	TokenKey     = "agentAuthToken"
	PublicKeyKey = "authTokenPublicKey"
	Lifetime     = 48 * time.Hour
	ReuseMargin  = 24 * time.Hour
)

// Token is an agent token and the public key that verifies it.
type Token struct {
	Token string
	// PublicKey is the base64 of the PEM public key (the installer's encoding,
	// which assisted-service's EC_PUBLIC_KEY_PEM takes).
	PublicKey  string
	ExpiresAt  time.Time
	InfraEnvID string
	// Reused is true when an existing token was kept.
	Reused bool
}

// Mint makes a new key pair and a token for infraEnvID that expires Lifetime
// after now. The private key is dropped: nobody needs it after signing.
func Mint(infraEnvID string, now time.Time) (*Token, error) {
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
	claims, _ := json.Marshal(map[string]any{"infra_env_id": infraEnvID, "exp": exp.Unix()})
	header := b64([]byte(`{"alg":"ES256","typ":"JWT"}`))
	signing := header + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return nil, err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return &Token{
		Token:      signing + "." + b64(sig),
		PublicKey:  base64.StdEncoding.EncodeToString(pubPEM),
		ExpiresAt:  exp,
		InfraEnvID: infraEnvID,
	}, nil
}

// Parse verifies token against publicKey (base64 PEM) and returns it with its
// expiry and infra-env id.
func Parse(token, publicKey string) (*Token, error) {
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
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errors.New("token signature is malformed")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, errors.New("token signature does not verify with the stored public key")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("token payload is malformed")
	}
	var claims struct {
		InfraEnvID string `json:"infra_env_id"`
		Exp        int64  `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		return nil, errors.New("token has no exp claim")
	}
	return &Token{Token: token, PublicKey: publicKey, ExpiresAt: time.Unix(claims.Exp, 0).UTC(), InfraEnvID: claims.InfraEnvID}, nil
}

// Usable reports whether t may be reused at now (more than ReuseMargin left).
func (t *Token) Usable(now time.Time) bool { return t.ExpiresAt.Sub(now) > ReuseMargin }

// Ensure returns the cluster's token when it has more than 24 hours left;
// otherwise it mints one for newInfraEnvID and creates or updates the Secret.
func Ensure(ctx context.Context, kube kubernetes.Interface, newInfraEnvID string, now time.Time) (*Token, error) {
	secrets := kube.CoreV1().Secrets(Namespace)
	s, err := secrets.Get(ctx, SecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s = nil
	case err != nil:
		return nil, grantErr("read", err)
	}
	if s != nil {
		if t, err := Parse(string(s.Data[TokenKey]), string(s.Data[PublicKeyKey])); err == nil && t.Usable(now) {
			t.Reused = true
			return t, nil
		}
	}
	t, err := Mint(newInfraEnvID, now)
	if err != nil {
		return nil, err
	}
	ann := map[string]string{"expiresAt": t.ExpiresAt.Format(time.RFC3339), "updatedAt": now.UTC().Format(time.RFC3339)}
	data := map[string][]byte{TokenKey: []byte(t.Token), PublicKeyKey: []byte(t.PublicKey)}
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
