package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The two-step hand-over (restore, then switchover) of an agent-based node 0:
// `restore` leaves no token (migrate leaves one in kubectl-assisted-handover),
// node 0's key was not carried (only its public key reaches node 0), so the
// controller's token from node 0 is refused by cluster 0 (seen in the
// rehearsal against the real release-4.19 service: 401 on every call; the
// installation never completes). switchover mints a cluster_id token with
// cluster 0's local-auth key for the cluster the controller's ConfigMap names
// (assisted-installer deploy/assisted-installer-controller/
// assisted-installer-controller-cm.yaml.template: cluster-id), writes it,
// keeps it on a rerun, never prints it; and a controller token cluster 0
// already accepts (node 0's key carried) is kept.
func TestSwitchover_MintsWhenRestoreLeftNoToken(t *testing.T) {
	k := harness.SharedKube(t)
	cs := k.Clientset(t)
	ctx := context.Background()
	p := harness.NewPlugin(t)
	const clusterID = "61492ab3-cc82-4799-8b26-a05959183c25"

	keyPEM := func() (*ecdsa.PrivateKey, []byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalECPrivateKey(key)
		pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
		return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pubDER})
	}
	setup := func(t *testing.T, controllerToken func(cluster0 *ecdsa.PrivateKey) string) (restoreNS, ctrlNS string, pub []byte, current string) {
		restoreNS, ctrlNS = k.Namespace(t), k.Namespace(t)
		key, priv, pub := keyPEM()
		// Cluster 0's local-auth Secret as the restore writes it.
		if _, err := cs.CoreV1().Secrets(restoreNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-servicelocal-auth"},
			Data: map[string][]byte{"ec-private-key.pem": priv, "ec-public-key.pem": pub}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		current = controllerToken(key)
		// The controller's objects as assisted-installer writes them, pointing at node 0.
		if _, err := cs.CoreV1().ConfigMaps(ctrlNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-config"},
			Data: map[string]string{"cluster-id": clusterID, "inventory-url": "http://192.168.111.80:8090", "skip-cert-verification": "false", "ca-cert-path": ""}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets(ctrlNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-secret"},
			Data: map[string][]byte{"pull-secret-token": []byte(current)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return restoreNS, ctrlNS, pub, current
	}
	controllerToken := func(ns string) string {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-installer-controller-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Data["pull-secret-token"])
	}
	args := func(restoreNS, ctrlNS string) []string {
		return []string{"switchover", "--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, restoreNS), "-n", restoreNS, "--controller-namespace", ctrlNS,
			"--service-url", "https://assisted-service-multicluster-engine.apps.c0.example.com", "--no-restart"}
	}

	t.Run("node 0's ABI token is replaced by a minted one", func(t *testing.T) {
		restoreNS, ctrlNS, pub, abi := setup(t, func(*ecdsa.PrivateKey) string {
			// An agent-installer-local token (release-4.18+ agent_local_authz_handler.go:
			// auth_scheme), signed by node 0's key, which cluster 0 does not have.
			other, _, _ := keyPEM()
			s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"auth_scheme": "agentAuth"}).SignedString(other)
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
		if _, err := cs.CoreV1().Secrets(restoreNS).Get(ctx, "kubectl-assisted-handover", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("setup: a handover Secret exists (%v)", err)
		}
		r := p.Run(t, args(restoreNS, ctrlNS)...)
		if r.ExitCode != 0 {
			t.Fatalf("switchover: exit %d\n%s", r.ExitCode, r.Combined())
		}
		tok := controllerToken(ctrlNS)
		if tok == abi {
			t.Fatal("the controller keeps node 0's token, which cluster 0 refuses")
		}
		if got := acceptedBy(t, pub, tok); got != "cluster_id="+clusterID {
			t.Fatalf("the controller's new token: claim %q, want cluster_id=%s", got, clusterID)
		}
		if strings.Contains(r.Combined(), tok) || strings.Contains(r.Combined(), abi) {
			t.Fatal("a token is in the output")
		}
		if !strings.Contains(r.Stderr, "minted with cluster 0's") || !strings.Contains(r.Stdout, "pull-secret-token") {
			t.Errorf("output does not say the token was minted and written:\n%s", r.Combined())
		}
		// A rerun mints again, finds the written token accepted, keeps it.
		again := p.Run(t, args(restoreNS, ctrlNS)...)
		if again.ExitCode != 0 || controllerToken(ctrlNS) != tok || !strings.Contains(again.Stdout, "already points at the new service") {
			t.Fatalf("rerun: exit %d, token kept %v\n%s", again.ExitCode, controllerToken(ctrlNS) == tok, again.Combined())
		}
	})

	t.Run("a token cluster 0 accepts is kept", func(t *testing.T) {
		restoreNS, ctrlNS, _, carried := setup(t, func(cluster0 *ecdsa.PrivateKey) string {
			// node 0's key was carried: its infra-env token verifies on cluster 0.
			return localJWT(t, cluster0, "infra_env_id", "b2000000-0000-4000-8000-0000000000ee")
		})
		r := p.Run(t, args(restoreNS, ctrlNS)...)
		if r.ExitCode != 0 {
			t.Fatalf("switchover: exit %d\n%s", r.ExitCode, r.Combined())
		}
		if controllerToken(ctrlNS) != carried || !strings.Contains(r.Stdout, "kept") {
			t.Fatalf("the accepted token was replaced\n%s", r.Combined())
		}
	})
}
