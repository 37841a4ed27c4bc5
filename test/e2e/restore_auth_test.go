package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The Secrets are created on the real API server, and the tokens are checked
// with golang-jwt, the library assisted-service itself parses them with
// (pkg/auth/local_authenticator.go: ParseECPublicKeyFromPEM, ES256 only).
func TestRestoreAuth_SecretsAndTokensTheServiceAccepts(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	cs := k.Clientset(t)
	ctx := context.Background()

	want, err := auth.DefaultPostgresCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := auth.EnsurePostgresSecret(ctx, cs, ns, want); err != nil || !created {
		t.Fatalf("postgres secret: created=%v err=%v", created, err)
	}
	key, created, err := auth.EnsureLocalAuthSecret(ctx, cs, ns)
	if err != nil || !created {
		t.Fatalf("local-auth secret: created=%v err=%v", created, err)
	}
	pg, _ := cs.CoreV1().Secrets(ns).Get(ctx, "postgres", metav1.GetOptions{})
	la, _ := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{})
	for _, f := range []string{"db.host", "db.name", "db.user", "db.password", "db.port"} {
		if len(pg.Data[f]) == 0 {
			t.Errorf("postgres secret lacks %s", f)
		}
	}

	pub, err := jwt.ParseECPublicKeyFromPEM(la.Data["ec-public-key.pem"])
	if err != nil {
		t.Fatalf("the service could not read ec-public-key.pem: %v", err)
	}
	priv, err := jwt.ParseECPrivateKeyFromPEM(la.Data["ec-private-key.pem"])
	if err != nil {
		t.Fatalf("the service could not read ec-private-key.pem: %v", err)
	}

	const clusterID = "b53c1137-37e7-4088-9787-9c892faaf8a9"
	tok, err := key.MintClusterToken(clusterID, auth.MintOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	parser := &jwt.Parser{ValidMethods: []string{jwt.SigningMethodES256.Alg()}}
	parsed, err := parser.Parse(tok.Reveal(), func(*jwt.Token) (any, error) { return pub, nil })
	if err != nil || !parsed.Valid {
		t.Fatalf("golang-jwt rejects the minted token: %v", err)
	}
	if claims := parsed.Claims.(jwt.MapClaims); claims["cluster_id"] != clusterID {
		t.Fatalf("claims = %v", claims)
	}
	other, _ := auth.GenerateKeyPair()
	forged, _ := other.MintClusterToken(clusterID, auth.MintOptions{})
	if _, err := parser.Parse(forged.Reveal(), func(*jwt.Token) (any, error) { return pub, nil }); err == nil {
		t.Fatal("a token signed with another key validates")
	}

	// The other way round: what the service signs with the Secret's key, we verify.
	theirs, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"infra_env_id": "ie-1"}).SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	if claims, err := auth.VerifyToken(la.Data["ec-public-key.pem"], theirs, time.Now()); err != nil || claims["infra_env_id"] != "ie-1" {
		t.Fatalf("VerifyToken of a golang-jwt token: %v %v", claims, err)
	}

	// A rerun adopts what is there and changes nothing.
	again, created, err := auth.EnsureLocalAuthSecret(ctx, cs, ns)
	if err != nil || created {
		t.Fatalf("rerun: created=%v err=%v", created, err)
	}
	tok2, _ := again.MintClusterToken(clusterID, auth.MintOptions{})
	if _, err := parser.Parse(tok2.Reveal(), func(*jwt.Token) (any, error) { return pub, nil }); err != nil {
		t.Fatalf("rerun key differs from the Secret's: %v", err)
	}
	if _, created, err := auth.EnsurePostgresSecret(ctx, cs, ns, auth.PostgresCredentials{Host: "h", Port: "1", Name: "n", User: "u", Password: "p"}); err != nil || created {
		t.Fatalf("postgres rerun: created=%v err=%v", created, err)
	}
	la2, _ := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{})
	pg2, _ := cs.CoreV1().Secrets(ns).Get(ctx, "postgres", metav1.GetOptions{})
	if la2.ResourceVersion != la.ResourceVersion || pg2.ResourceVersion != pg.ResourceVersion {
		t.Fatal("a rerun modified the Secrets")
	}
}
