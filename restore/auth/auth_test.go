package auth

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const ns = "multicluster-engine"

func TestEnsurePostgresSecret(t *testing.T) {
	ctx := context.Background()
	want := PostgresCredentials{Host: "localhost", Port: "5432", Name: "installer", User: "admin", Password: "planted-pw-123"}

	c := fake.NewClientset()
	got, created, err := EnsurePostgresSecret(ctx, c, ns, want)
	if err != nil || !created || got != want {
		t.Fatalf("first ensure: %v created=%v err=%v", got, created, err)
	}
	s, _ := c.CoreV1().Secrets(ns).Get(ctx, PostgresSecretName, metav1.GetOptions{})
	for k, v := range map[string]string{"db.host": "localhost", "db.port": "5432", "db.name": "installer", "db.user": "admin", "db.password": "planted-pw-123"} {
		if string(s.Data[k]) != v {
			t.Errorf("secret %s = %q, want %q", k, s.Data[k], v)
		}
	}

	other := want
	other.Password = "another"
	got, created, err = EnsurePostgresSecret(ctx, c, ns, other)
	if err != nil || created || got.Password != "planted-pw-123" {
		t.Fatalf("second ensure must keep the existing secret: created=%v err=%v", created, err)
	}

	broken := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PostgresSecretName, Namespace: ns},
		Data: map[string][]byte{"db.host": []byte("h")}})
	if _, _, err := EnsurePostgresSecret(ctx, broken, ns, want); err == nil || !strings.Contains(err.Error(), "db.password") {
		t.Fatalf("incomplete existing secret: err = %v", err)
	}
}

func TestPostgresCredentialsNeverPrintPassword(t *testing.T) {
	c, err := DefaultPostgresCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Password) != 24 || c.User != "admin" || c.Name != "installer" {
		t.Fatalf("defaults = %v", c)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(s, c.Password) {
			t.Errorf("printed credentials contain the password: %s", s)
		}
	}
	if u := c.URL(); u.User.Username() != "admin" || u.Query().Get("sslmode") != "disable" {
		t.Errorf("URL = %s", u.Redacted())
	}
}

func TestEnsureLocalAuthSecret(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	k, created, err := EnsureLocalAuthSecret(ctx, c, ns)
	if err != nil || !created {
		t.Fatalf("create: created=%v err=%v", created, err)
	}
	s, _ := c.CoreV1().Secrets(ns).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
	priv, _ := pem.Decode(s.Data["ec-private-key.pem"])
	pub, _ := pem.Decode(s.Data["ec-public-key.pem"])
	if priv == nil || priv.Type != "EC PRIVATE KEY" || pub == nil || pub.Type != "EC PUBLIC KEY" {
		t.Fatalf("secret keys are not the operator's PEM blocks: %v %v", priv != nil, pub != nil)
	}

	// Rerun: the same key comes back, and its tokens verify with the Secret's public key.
	k2, created, err := EnsureLocalAuthSecret(ctx, c, ns)
	if err != nil || created {
		t.Fatalf("rerun: created=%v err=%v", created, err)
	}
	tok, err := k2.MintClusterToken("b53c1137-37e7-4088-9787-9c892faaf8a9", MintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := VerifyToken(s.Data["ec-public-key.pem"], tok.Reveal(), time.Now())
	if err != nil || claims["cluster_id"] != "b53c1137-37e7-4088-9787-9c892faaf8a9" {
		t.Fatalf("verify: %v %v", claims, err)
	}
	if _, hasExp := claims["exp"]; hasExp {
		t.Error("token without TTL has exp")
	}
	_ = k

	t.Run("empty secret gets keys", func(t *testing.T) {
		c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LocalAuthSecretName, Namespace: ns}})
		if _, created, err := EnsureLocalAuthSecret(ctx, c, ns); err != nil || !created {
			t.Fatalf("created=%v err=%v", created, err)
		}
		s, _ := c.CoreV1().Secrets(ns).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
		if len(s.Data[KeyECPrivate]) == 0 || len(s.Data[KeyECPublic]) == 0 {
			t.Fatal("keys not written")
		}
	})
	t.Run("one key only is refused", func(t *testing.T) {
		c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LocalAuthSecretName, Namespace: ns},
			Data: map[string][]byte{KeyECPublic: s.Data[KeyECPublic]}})
		if _, _, err := EnsureLocalAuthSecret(ctx, c, ns); err == nil || !strings.Contains(err.Error(), "only one") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("mismatched pair is refused", func(t *testing.T) {
		other, _ := GenerateKeyPair()
		_, otherPub, _ := other.PEM()
		c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LocalAuthSecretName, Namespace: ns},
			Data: map[string][]byte{KeyECPrivate: s.Data[KeyECPrivate], KeyECPublic: otherPub}})
		if _, _, err := EnsureLocalAuthSecret(ctx, c, ns); err == nil || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTokens(t *testing.T) {
	k, _ := GenerateKeyPair()
	_, pub, _ := k.PEM()
	other, _ := GenerateKeyPair()
	_, otherPub, _ := other.PEM()
	now := time.Unix(1_760_000_000, 0)
	tok, err := k.Mint(ClaimInfraEnvID, "ie-1", MintOptions{TTL: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := VerifyToken(pub, tok.Reveal(), now.Add(59*time.Minute))
	if err != nil || claims["infra_env_id"] != "ie-1" || claims["iat"].(float64) != float64(now.Unix()) || claims["exp"].(float64) != float64(now.Add(time.Hour).Unix()) {
		t.Fatalf("claims %v err %v", claims, err)
	}
	if _, err := VerifyToken(pub, tok.Reveal(), now.Add(time.Hour)); err == nil {
		t.Error("expired token verified")
	}
	if _, err := VerifyToken(otherPub, tok.Reveal(), now); err == nil {
		t.Error("token verified with another key")
	}
	parts := strings.Split(tok.Reveal(), ".")
	forged := parts[0] + "." + strings.TrimRight(parts[1], "=") + "x." + parts[2]
	if _, err := VerifyToken(pub, forged, now); err == nil {
		t.Error("tampered token verified")
	}
	if _, err := k.Mint(ClaimClusterID, "", MintOptions{}); err == nil {
		t.Error("empty id minted")
	}
	holder := struct{ T Token }{tok}
	js, _ := json.Marshal(holder)
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v", holder, holder, holder), string(js), fmt.Sprint(k), fmt.Sprintf("%#v", k)} {
		if strings.Contains(s, parts[2]) || strings.Contains(s, "BEGIN") {
			t.Errorf("printed form leaks: %s", s)
		}
	}
}

func TestURLSigner(t *testing.T) {
	k, _ := GenerateKeyPair()
	_, pub, _ := k.PEM()
	s := URLSigner{Key: k}
	u, err := s.SignURL("https://svc/api/assisted-install/v2/events?host_id=h1", "", "ie-9")
	if err != nil {
		t.Fatal(err)
	}
	tok := u[strings.Index(u, "api_key=")+len("api_key="):]
	if i := strings.IndexByte(tok, '&'); i >= 0 {
		tok = tok[:i]
	}
	claims, err := VerifyToken(pub, tok, time.Now())
	if err != nil || claims["infra_env_id"] != "ie-9" {
		t.Fatalf("signed URL %s: claims %v err %v", u, claims, err)
	}
	if _, err := s.SignURL("https://svc/x", "", ""); err == nil {
		t.Error("URL without ids signed")
	}
}
