package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The operator's local-auth Secret (agentserviceconfig_controller.go
// newAgentLocalAuthSecret): assisted-service gets these PEM values as
// EC_PRIVATE_KEY_PEM and EC_PUBLIC_KEY_PEM.
const (
	LocalAuthSecretName = "assisted-servicelocal-auth"
	KeyECPrivate        = "ec-private-key.pem"
	KeyECPublic         = "ec-public-key.pem"
)

// PEM block types, as the operator writes them (gencrypto.ECDSAKeyPairPEM):
// SEC 1 private key, PKIX public key.
const (
	pemPrivate = "EC PRIVATE KEY"
	pemPublic  = "EC PUBLIC KEY"
)

// KeyPair is the P-256 key pair of the local-auth Secret. It has no exported
// fields and prints as redacted.
type KeyPair struct {
	priv *ecdsa.PrivateKey
}

// GenerateKeyPair makes a fresh P-256 key pair.
func GenerateKeyPair() (*KeyPair, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &KeyPair{priv: k}, nil
}

func (k *KeyPair) String() string   { return "<redacted EC key pair>" }
func (k *KeyPair) GoString() string { return k.String() }

// PEM returns the private and public keys as the operator encodes them.
func (k *KeyPair) PEM() (private, public []byte, err error) {
	der, err := x509.MarshalECPrivateKey(k.priv)
	if err != nil {
		return nil, nil, err
	}
	pub, err := k.PublicPEM()
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), pub, nil
}

// PublicPEM returns the public key (PKIX, PEM).
func (k *KeyPair) PublicPEM() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}), nil
}

// ParseKeyPair reads a PEM private key (SEC 1 or PKCS #8, P-256) and checks
// that the PEM public key belongs to it.
func ParseKeyPair(privatePEM, publicPEM []byte) (*KeyPair, error) {
	k, err := ParsePrivateKey(privatePEM)
	if err != nil {
		return nil, err
	}
	pub, err := parsePublicKey(publicPEM)
	if err != nil {
		return nil, err
	}
	if !pub.Equal(&k.priv.PublicKey) {
		return nil, errors.New("the public key does not belong to the private key")
	}
	return k, nil
}

// ParsePrivateKey reads a P-256 private key (PEM: SEC 1 or PKCS #8); the
// public key is the private key's.
func ParsePrivateKey(privatePEM []byte) (*KeyPair, error) {
	b, _ := pem.Decode(privatePEM)
	if b == nil {
		return nil, errors.New("private key: no PEM block")
	}
	var priv *ecdsa.PrivateKey
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		priv = k
	} else if k8, err8 := x509.ParsePKCS8PrivateKey(b.Bytes); err8 == nil {
		ec, ok := k8.(*ecdsa.PrivateKey)
		if !ok {
			return nil, errors.New("private key: not an EC key")
		}
		priv = ec
	} else {
		return nil, errors.New("private key: not an EC private key")
	}
	if priv.Curve != elliptic.P256() {
		return nil, errors.New("private key: not on P-256 (ES256 needs P-256)")
	}
	return &KeyPair{priv: priv}, nil
}

func parsePublicKey(publicPEM []byte) (*ecdsa.PublicKey, error) {
	b, _ := pem.Decode(publicPEM)
	if b == nil {
		return nil, errors.New("public key: no PEM block")
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, errors.New("public key: not a PKIX public key")
	}
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("public key: not a P-256 EC key")
	}
	return ec, nil
}

// Equal reports whether two key pairs are the same key.
func (k *KeyPair) Equal(o *KeyPair) bool {
	return k != nil && o != nil && k.priv.Equal(o.priv)
}

// KeyPairFromSecret reads the key pair of a local-auth Secret's data (keys
// KeyECPrivate and KeyECPublic, PEM, as the operator writes them).
func KeyPairFromSecret(data map[string][]byte) (*KeyPair, error) {
	priv, pub := data[KeyECPrivate], data[KeyECPublic]
	if len(priv) == 0 || len(pub) == 0 {
		return nil, fmt.Errorf("the Secret lacks %s or %s", KeyECPrivate, KeyECPublic)
	}
	return ParseKeyPair(priv, pub)
}

// Where the key pair of cluster 0's local-auth Secret came from.
const (
	KeyFromNodeZero  = "node0"     // node 0's key, carried in the bundle: its tokens verify
	KeyGenerated     = "generated" // a new key: node 0's tokens do not verify
	KeyFromCluster   = "existing"  // the Secret already held a key, kept
	KeyNodeZeroMatch = "node0-existing"
)

// EnsureLocalAuthSecret is EnsureLocalAuthSecretWith without a carried key.
func EnsureLocalAuthSecret(ctx context.Context, c kubernetes.Interface, ns string) (*KeyPair, bool, error) {
	k, from, err := EnsureLocalAuthSecretWith(ctx, c, ns, nil)
	return k, from == KeyGenerated, err
}

// EnsureLocalAuthSecretWith makes sure the local-auth Secret of ns holds a
// key pair and returns it with where it came from: an absent Secret, or one
// without either key, gets carried (node 0's key from the bundle) or, when
// carried is nil, a new key; one with both keys is read, checked and kept
// (KeyNodeZeroMatch when it is carried's). A Secret with only one key is an
// error: the operator keeps it as it is and no token could validate.
func EnsureLocalAuthSecretWith(ctx context.Context, c kubernetes.Interface, ns string, carried *KeyPair) (*KeyPair, string, error) {
	secrets := c.CoreV1().Secrets(ns)
	var (
		out  *KeyPair
		from string
	)
	// Someone (the operator) may write it meanwhile: then read theirs.
	racing := func(err error) bool { return apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) }
	err := retry.OnError(retry.DefaultRetry, racing, func() error {
		cur, err := secrets.Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("read secret %s/%s: %w", ns, LocalAuthSecretName, err)
		}
		exists := err == nil
		if exists {
			priv, hasPriv := cur.Data[KeyECPrivate]
			pub, hasPub := cur.Data[KeyECPublic]
			switch {
			case hasPriv && hasPub:
				k, err := ParseKeyPair(priv, pub)
				if err != nil {
					return fmt.Errorf("secret %s/%s: %w", ns, LocalAuthSecretName, err)
				}
				out, from = k, KeyFromCluster
				if k.Equal(carried) {
					from = KeyNodeZeroMatch
				}
				return nil
			case hasPriv || hasPub:
				return fmt.Errorf("secret %s/%s holds only one of %s and %s: the operator would keep it and tokens would not validate; delete it or add the other key",
					ns, LocalAuthSecretName, KeyECPrivate, KeyECPublic)
			}
		}
		k, kfrom := carried, KeyFromNodeZero
		if k == nil {
			if k, err = GenerateKeyPair(); err != nil {
				return err
			}
			kfrom = KeyGenerated
		}
		privPEM, pubPEM, err := k.PEM()
		if err != nil {
			return err
		}
		if !exists {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: LocalAuthSecretName, Namespace: ns, Annotations: map[string]string{AnnotationCreatedBy: "restore"}},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{KeyECPrivate: privPEM, KeyECPublic: pubPEM},
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		} else {
			upd := cur.DeepCopy()
			if upd.Data == nil {
				upd.Data = map[string][]byte{}
			}
			upd.Data[KeyECPrivate], upd.Data[KeyECPublic] = privPEM, pubPEM
			_, err = secrets.Update(ctx, upd, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			out, from = k, kfrom
			return nil
		case racing(err):
			return err // retried: read what the other writer wrote
		}
		return fmt.Errorf("write secret %s/%s: %w", ns, LocalAuthSecretName, err)
	})
	switch {
	case err == nil:
		return out, from, nil
	case racing(err):
		return nil, "", fmt.Errorf("secret %s/%s keeps changing under the restore", ns, LocalAuthSecretName)
	}
	return nil, "", err
}
