package authtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// rawClaims decodes a JWT payload independently of DecodeClaims.
func rawClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || string(hdr) != `{"alg":"ES256","typ":"JWT"}` {
		t.Fatalf("header %s %v", hdr, err)
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The claims each version's assisted-service checks:
//   - release-4.17 pkg/auth/agent_local_authenticator.go: infra_env_id must be
//     a string, exp (a number) must not be past.
//   - release-4.18..4.20 pkg/auth/agent_local_authz_handler.go: auth_scheme
//     must be a string equal to the route's scheme; the authenticator checks
//     exp.
func TestMintSingle_417Claims(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Mint(KindSingle, "9b1a8f5e-1111-4222-8333-444455556666", now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent != s.User || s.Agent != s.Watcher {
		t.Fatal("4.17 uses one token for every use")
	}
	got := rawClaims(t, s.Agent)
	want := map[string]any{"infra_env_id": "9b1a8f5e-1111-4222-8333-444455556666", "exp": float64(1767495845)} // 2026-01-04T03:04:05Z
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claims %v, want %v", got, want)
	}
	if _, err := Verify(s.Agent, s.PublicKey); err != nil {
		t.Fatal(err)
	}
}

func TestMintPerScheme_418PlusClaims(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Mint(KindPerScheme, "ignored", now)
	if err != nil {
		t.Fatal(err)
	}
	for tok, scheme := range map[string]string{s.Agent: "agentAuth", s.User: "userAuth", s.Watcher: "watcherAuth"} {
		got := rawClaims(t, tok)
		want := map[string]any{"auth_scheme": scheme, "exp": float64(1767495845)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s token claims %v, want %v", scheme, got, want)
		}
		if _, err := Verify(tok, s.PublicKey); err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
	}
	if s.Agent == s.User || s.User == s.Watcher {
		t.Fatal("4.18+ tokens must differ")
	}
	// The public key is base64 of an "EC PUBLIC KEY" PEM holding a P-256 key
	// (what the service base64-decodes, then parses with ParseECPublicKeyFromPEM).
	pemBytes, err := base64.StdEncoding.DecodeString(s.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(pemBytes)
	if blk == nil || blk.Type != "EC PUBLIC KEY" {
		t.Fatalf("PEM %q", pemBytes)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if _, ok := k.(*ecdsa.PublicKey); err != nil || !ok {
		t.Fatalf("key %T %v", k, err)
	}
}

func TestVerifyRejectsForeignKeyAndTampering(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, _ := Mint(KindSingle, "infra-1", now)
	other, _ := Mint(KindSingle, "infra-1", now)
	if _, err := Verify(s.Agent, other.PublicKey); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("foreign key: err = %v", err)
	}
	parts := strings.Split(s.Agent, ".")
	if _, err := Verify(parts[0]+"."+parts[1]+"x."+parts[2], s.PublicKey); err == nil {
		t.Fatal("tampered payload accepted")
	}
}

func TestLoadChecksKind(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	single, _ := Mint(KindSingle, "infra-1", now)
	per, _ := Mint(KindPerScheme, "", now)
	if _, err := Load(KindPerScheme, single.Agent, "", "", single.PublicKey); err == nil {
		t.Fatal("a 4.17 token passed as a 4.18+ set")
	}
	if _, err := Load(KindSingle, per.Agent, "", "", per.PublicKey); err == nil || !strings.Contains(err.Error(), "infra_env_id") {
		t.Fatalf("a 4.18+ agent token passed as a 4.17 token: %v", err)
	}
	// Swapped user and watcher tokens are refused.
	if _, err := Load(KindPerScheme, per.Agent, per.Watcher, per.User, per.PublicKey); err == nil || !strings.Contains(err.Error(), "auth_scheme") {
		t.Fatalf("swapped tokens: %v", err)
	}
	got, err := Load(KindPerScheme, per.Agent, per.User, per.Watcher, per.PublicKey)
	if err != nil || got.Watcher != per.Watcher || !got.ExpiresAt.Equal(per.ExpiresAt) {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestEnsure_ReusesWithMoreThan24hLeftElseRefreshes(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, err := Ensure(ctx, kube, KindPerScheme, "a", t0)
	if err != nil || first.Reused {
		t.Fatalf("first: %+v %v", first, err)
	}
	s, err := kube.CoreV1().Secrets(Namespace).Get(ctx, SecretName, metav1.GetOptions{})
	if err != nil || s.Annotations["expiresAt"] != "2026-01-03T00:00:00Z" {
		t.Fatalf("secret %v %v", s, err)
	}
	// All three tokens and the key are stored (what `oc adm node-image` reads).
	for k, v := range map[string]string{"agentAuthToken": first.Agent, "userAuthToken": first.User, "watcherAuthToken": first.Watcher, "authTokenPublicKey": first.PublicKey} {
		if string(s.Data[k]) != v || v == "" {
			t.Fatalf("secret key %s = %q", k, s.Data[k])
		}
	}
	// 23h later: 25h left, reused.
	again, err := Ensure(ctx, kube, KindPerScheme, "b", t0.Add(23*time.Hour))
	if err != nil || !again.Reused || again.Agent != first.Agent || again.Watcher != first.Watcher {
		t.Fatalf("at +23h: %+v %v", again, err)
	}
	// 25h later: 23h left, refreshed, and every token replaced together.
	fresh, err := Ensure(ctx, kube, KindPerScheme, "c", t0.Add(25*time.Hour))
	if err != nil || fresh.Reused || fresh.Agent == first.Agent || !fresh.ExpiresAt.Equal(t0.Add(73*time.Hour)) {
		t.Fatalf("at +25h: %+v %v", fresh, err)
	}
	s, _ = kube.CoreV1().Secrets(Namespace).Get(ctx, SecretName, metav1.GetOptions{})
	if _, err := Load(KindPerScheme, string(s.Data["agentAuthToken"]), string(s.Data["userAuthToken"]), string(s.Data["watcherAuthToken"]), string(s.Data["authTokenPublicKey"])); err != nil {
		t.Fatalf("refreshed secret is not one consistent set: %v", err)
	}
}

// A 4.17 secret (one token) does not suit a cluster upgraded to 4.18: the
// set is replaced; going back to 4.17 drops the 4.18 user and watcher tokens
// so no token signed by an old key stays beside the new key.
func TestEnsure_KindChangeReplacesEveryToken(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Ensure(ctx, kube, KindSingle, "a", t0); err != nil {
		t.Fatal(err)
	}
	per, err := Ensure(ctx, kube, KindPerScheme, "b", t0.Add(time.Hour))
	if err != nil || per.Reused {
		t.Fatalf("4.18 after 4.17: %+v %v", per, err)
	}
	single, err := Ensure(ctx, kube, KindSingle, "c", t0.Add(2*time.Hour))
	if err != nil || single.Reused {
		t.Fatalf("4.17 after 4.18: %+v %v", single, err)
	}
	s, _ := kube.CoreV1().Secrets(Namespace).Get(ctx, SecretName, metav1.GetOptions{})
	if _, ok := s.Data["userAuthToken"]; ok {
		t.Fatal("stale userAuthToken kept beside a new key")
	}
	if _, ok := s.Data["watcherAuthToken"]; ok {
		t.Fatal("stale watcherAuthToken kept beside a new key")
	}
	if c := rawClaims(t, string(s.Data["agentAuthToken"])); c["infra_env_id"] != "c" {
		t.Fatalf("claims %v", c)
	}
}
