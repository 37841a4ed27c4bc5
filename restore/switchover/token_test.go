package switchover

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
)

// The controller's token was signed with node 0's key; when the restore
// carried that key over, cluster 0 accepts the token and switchover keeps it.
func TestRun_KeepsATokenClusterZeroAccepts(t *testing.T) {
	ctx := context.Background()
	nodeZero, _ := auth.GenerateKeyPair()
	other, _ := auth.GenerateKeyPair()
	pub, _ := nodeZero.PublicPEM()
	oldTok, _ := nodeZero.MintClusterToken("b53c1137-37e7-4088-9787-9c892faaf8a9", auth.MintOptions{})
	foreign, _ := other.MintClusterToken("b53c1137-37e7-4088-9787-9c892faaf8a9", auth.MintOptions{})
	// ABI's controller token: {"sub": "agentAuth"} (openshift/installer
	// pkg/asset/agent/gencrypto/authconfig.go), never accepted by local auth.
	subTok := mintSub(t, nodeZero)

	for _, c := range []struct {
		name    string
		current string
		rotate  bool
		kept    bool
	}{
		{"node-0 token, key carried", oldTok.Reveal(), false, true},
		{"node-0 token, --rotate-tokens", oldTok.Reveal(), true, false},
		{"token of another key", foreign.Reveal(), false, false},
		{"ABI sub-only token", subTok, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := DefaultNamespace
			cs := fake.NewClientset(
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns}, Data: map[string]string{KeyInventoryURL: "http://192.168.111.80:8090"}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: ns}, Data: map[string][]byte{KeyToken: []byte(c.current)}})
			res, err := Run(ctx, cs, Options{ServiceURL: "https://svc.c0.example.com", Token: "restore-minted", LocalAuthPublicKey: pub, RotateToken: c.rotate})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := cs.CoreV1().Secrets(ns).Get(ctx, SecretName, metav1.GetOptions{})
			got := string(s.Data[KeyToken])
			if c.kept && (got != c.current || !res.TokenKept) {
				t.Errorf("token replaced (kept=%v)", res.TokenKept)
			}
			if !c.kept && (got != "restore-minted" || res.TokenKept) {
				t.Errorf("token not replaced (kept=%v)", res.TokenKept)
			}
		})
	}
}

func mintSub(t *testing.T, k *auth.KeyPair) string {
	t.Helper()
	// Mint with a non-id claim through the same signer: Mint's claim name is
	// free-form, so "sub" gives {"sub": "agentAuth", "iat": ...}.
	tok, err := k.Mint(auth.Claim("sub"), "agentAuth", auth.MintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Reveal()
}
