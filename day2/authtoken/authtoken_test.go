package authtoken

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestMintParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tok, err := Mint("infra-1", now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(tok.Token, tok.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ExpiresAt.Equal(now.Add(48*time.Hour)) || got.InfraEnvID != "infra-1" {
		t.Fatalf("parsed %+v", got)
	}
	other, _ := Mint("infra-1", now)
	if _, err := Parse(tok.Token, other.PublicKey); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("foreign key: err = %v", err)
	}
	parts := strings.Split(tok.Token, ".")
	if _, err := Parse(parts[0]+"."+parts[1]+"x."+parts[2], tok.PublicKey); err == nil {
		t.Fatal("tampered payload accepted")
	}
}

func TestEnsure_ReusesWithMoreThan24hLeftElseRefreshes(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, err := Ensure(ctx, kube, "a", t0)
	if err != nil || first.Reused {
		t.Fatalf("first: %+v %v", first, err)
	}
	s, err := kube.CoreV1().Secrets(Namespace).Get(ctx, SecretName, metav1.GetOptions{})
	if err != nil || string(s.Data[TokenKey]) != first.Token || s.Annotations["expiresAt"] != "2026-01-03T00:00:00Z" {
		t.Fatalf("secret %v %v", s, err)
	}
	// 23h later: 25h left, reused.
	again, err := Ensure(ctx, kube, "b", t0.Add(23*time.Hour))
	if err != nil || !again.Reused || again.Token != first.Token || again.InfraEnvID != "a" {
		t.Fatalf("at +23h: %+v %v", again, err)
	}
	// 25h later: 23h left, refreshed and stored.
	fresh, err := Ensure(ctx, kube, "c", t0.Add(25*time.Hour))
	if err != nil || fresh.Reused || fresh.Token == first.Token || !fresh.ExpiresAt.Equal(t0.Add(73*time.Hour)) {
		t.Fatalf("at +25h: %+v %v", fresh, err)
	}
	s, _ = kube.CoreV1().Secrets(Namespace).Get(ctx, SecretName, metav1.GetOptions{})
	if string(s.Data[TokenKey]) != fresh.Token || string(s.Data[PublicKeyKey]) != fresh.PublicKey {
		t.Fatal("refreshed token not stored")
	}
}
