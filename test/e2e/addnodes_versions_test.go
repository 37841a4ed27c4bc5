package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

// A 4.19 cluster gets the 4.18+ tokens: one per security scheme, each with
// its auth_scheme claim (assisted-service release-4.19
// pkg/auth/agent_local_authz_handler.go answers 500 "malformed auth_scheme
// claim" otherwise), all stored in openshift-config/agent-auth-token with the
// public key. A 4.17-style Secret left from before an upgrade does not suit
// and is replaced as a whole; a second build within the day reuses the set.
func TestAddNodesCreate_419PerSchemeTokens(t *testing.T) {
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	baseBytes, _ := os.ReadFile(base)
	e := newDay2Env(t, map[string][]byte{"x86_64": baseBytes}, func(o *synthetic.ClusterOptions) { o.Version = "4.19.7" })
	ctx := context.Background()
	secrets := e.kube.Clientset(t).CoreV1().Secrets("openshift-config")
	_ = secrets.Delete(ctx, "agent-auth-token", metav1.DeleteOptions{})
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "agent-auth-token", metav1.DeleteOptions{}) })
	old, err := authtoken.Mint(authtoken.KindSingle, "old-infra-env", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-auth-token", Namespace: "openshift-config"},
		Data:       map[string][]byte{"agentAuthToken": []byte(old.Agent), "authTokenPublicKey": []byte(old.PublicKey)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfgFile := writeFile(t, "nodes-config.yaml", twoHosts)
	build := func(dir string) (createResult, map[string]string, map[string]string) {
		out := filepath.Join(t.TempDir(), dir)
		res := decodeResult(t, e.create(t, "-f", cfgFile, "--dir", out, "-o", "json"))
		raw, _, _ := embeddedIgnition(t, filepath.Join(out, "node.x86_64.iso"))
		c := parseIgn(t, raw)
		return res, env(c.mustFile(t, "/usr/local/share/assisted-service/assisted-service.env")), env(c.mustFile(t, "/etc/assisted/rendezvous-host.env"))
	}
	res, svc, rv := build("first")
	if res.TokenReused || res.Cluster.Version != "4.19.7" {
		t.Fatalf("a 4.17 token was reused for 4.19 (reused=%v, version %q)", res.TokenReused, res.Cluster.Version)
	}
	sec, err := secrets.Get(ctx, "agent-auth-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, envName := range map[string]string{"agentAuthToken": "AGENT_AUTH_TOKEN", "userAuthToken": "USER_AUTH_TOKEN", "watcherAuthToken": "WATCHER_AUTH_TOKEN", "authTokenPublicKey": "EC_PUBLIC_KEY_PEM"} {
		if v := string(sec.Data[key]); v == "" || v != svc[envName] {
			t.Errorf("Secret key %s and the ISO's %s differ (or are empty)", key, envName)
		}
	}
	if string(sec.Data["authTokenPublicKey"]) == old.PublicKey {
		t.Error("the old public key was kept")
	}
	for envName, scheme := range map[string]string{"AGENT_AUTH_TOKEN": "agentAuth", "USER_AUTH_TOKEN": "userAuth", "WATCHER_AUTH_TOKEN": "watcherAuth"} {
		c, err := authtoken.Verify(svc[envName], svc["EC_PUBLIC_KEY_PEM"])
		if err != nil || c.AuthScheme != scheme || !c.ExpiresAt.Equal(res.TokenExpiresAt.UTC().Truncate(time.Second)) {
			t.Errorf("%s: claims %+v, err %v; want auth_scheme %s, exp %v", envName, c, err, scheme, res.TokenExpiresAt)
		}
	}
	if rv["USER_AUTH_TOKEN"] != svc["USER_AUTH_TOKEN"] {
		t.Error("rendezvous-host.env lacks the 4.18+ USER_AUTH_TOKEN")
	}
	if svc["INFRA_ENV_ID"] == "" || svc["HW_VALIDATOR_REQUIREMENTS"] == "" {
		t.Errorf("INFRA_ENV_ID %q, HW_VALIDATOR_REQUIREMENTS %q", svc["INFRA_ENV_ID"], svc["HW_VALIDATOR_REQUIREMENTS"])
	}

	res2, svc2, _ := build("second")
	if !res2.TokenReused || svc2["WATCHER_AUTH_TOKEN"] != svc["WATCHER_AUTH_TOKEN"] || svc2["USER_AUTH_TOKEN"] != svc["USER_AUTH_TOKEN"] {
		t.Fatalf("second build within the day: reused=%v, same tokens=%v", res2.TokenReused, svc2["WATCHER_AUTH_TOKEN"] == svc["WATCHER_AUTH_TOKEN"])
	}
	if svc2["INFRA_ENV_ID"] == svc["INFRA_ENV_ID"] {
		t.Error("two builds share an infra-env id")
	}
}
