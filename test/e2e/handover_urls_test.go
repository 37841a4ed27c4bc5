package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// localJWT mints a token as node 0's service does with AUTH_TYPE=local
// (openshift/assisted-service internal/gencrypto/token.go LocalJWTForKey:
// ES256, the single claim {cluster_id|infra_env_id: id}).
func localJWT(t *testing.T, k *ecdsa.PrivateKey, claim, id string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{claim: id}).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// acceptedBy applies cluster 0's local-auth rules with the service's library
// (pkg/auth/local_authenticator.go validateToken and AuthAgentAuth): golang-jwt
// v4, ES256 only, the Secret's EC_PUBLIC_KEY_PEM, then an infra_env_id or
// cluster_id claim. It returns "claim=id".
func acceptedBy(t *testing.T, publicPEM []byte, token string) string {
	t.Helper()
	pub, err := jwt.ParseECPublicKeyFromPEM(publicPEM)
	if err != nil {
		t.Fatalf("cluster 0's public key: %v", err)
	}
	parsed, err := (&jwt.Parser{ValidMethods: []string{"ES256"}}).Parse(token, func(*jwt.Token) (interface{}, error) { return pub, nil })
	if err != nil {
		t.Errorf("cluster 0 refuses the token: %v", err)
		return ""
	}
	c := parsed.Claims.(jwt.MapClaims)
	for _, k := range []string{"infra_env_id", "cluster_id"} {
		if id, ok := c[k].(string); ok {
			return k + "=" + id
		}
	}
	t.Errorf("token has no infra_env_id or cluster_id claim: %v", c)
	return ""
}

// The hand-over with real-form status URLs and node 0's local-auth key:
// node 0 (kube-api mode, AUTH_TYPE=local) wrote its ACI and Agent URLs with
// api_keys signed by its key (the Agent's events URL names only host_id; the
// infra-env is in the token), and the bundle carries its
// assisted-servicelocal-auth Secret (bundle create --resources cluster does).
// The restore with --service-url rewrites every URL onto cluster 0 and signs
// it with the claim the controller uses, makes node 0's key cluster 0's, so
// the tokens node 0 issued verify there, and a rerun changes nothing.
func TestHandover_RealFormURLsAndNodeZeroTokens(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	ns := k.Namespace(t)
	id := ns
	identity, recipient := ageKey(t)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(key)
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pubDER})
	// Node 0's operator Secret (agentserviceconfig_controller.go
	// newAgentLocalAuthSecret), in node 0's service namespace.
	localAuth := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "assisted-servicelocal-auth", "namespace": "site-a-mce"},
		"data": map[string]any{"ec-private-key.pem": base64.StdEncoding.EncodeToString(privPEM),
			"ec-public-key.pem": base64.StdEncoding.EncodeToString(pubPEM)}}}

	objs := node0Export(t, id)
	clusterTok := localJWT(t, key, "cluster_id", node0Cluster)
	infraTok := localJWT(t, key, "infra_env_id", node0Infra)
	for _, o := range objs {
		switch o.GetKind() {
		case "AgentClusterInstall":
			// clusterdeployments_controller.go populateEventsURL / generateControllerLogsDownloadURL
			_ = unstructured.SetNestedField(o.Object, node0Service+"/api/assisted-install/v2/events?api_key="+clusterTok+"&cluster_id="+node0Cluster, "status", "debugInfo", "eventsURL")
			_ = unstructured.SetNestedField(o.Object, node0Service+"/api/assisted-install/v2/clusters/"+node0Cluster+"/logs?api_key="+clusterTok, "status", "debugInfo", "logsURL")
		case "Agent":
			// agent_controller.go populateEventsURL (infra_env_id claim, host_id
			// filter) and generateControllerLogsDownloadURL (cluster_id claim)
			_ = unstructured.SetNestedField(o.Object, node0Service+"/api/assisted-install/v2/events?api_key="+infraTok+"&host_id="+o.GetName(), "status", "debugInfo", "eventsURL")
			_ = unstructured.SetNestedField(o.Object, node0Service+"/api/assisted-install/v2/clusters/"+node0Cluster+"/logs?api_key="+clusterTok+"&host_id="+o.GetName()+"&logs_type=host", "status", "debugInfo", "logsURL")
			// The Agent's InfraEnv label names none the bundle has: the
			// infra-env comes from the token alone.
			l := o.GetLabels()
			l["infraenvs.agent-install.openshift.io"] = "elsewhere"
			o.SetLabels(l)
		}
	}
	objs = append(objs, localAuth)

	src := node0Database(t, assisted.Small)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}, Resources: exportedObjects(objs)})
	target := emptyDatabase(t)
	// Cluster 0's service on node 0's former address, another port: not a node-0 URL.
	const serviceURL = "https://192.168.111.80:8443"
	args := []string{"restore", ref, "--signer", signerFile(t), "--identity", identity,
		"--db", withPassword(t, target.URL, plantedDBPassword), "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns,
		"--namespace-mapping", "spoke-cluster=" + ns + ",demo=" + ns + ",agents=" + ns, "--service-url", serviceURL, "-o", "json"}
	r := p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("restore: exit %d\n%s", r.ExitCode, r.Combined())
	}
	if !strings.Contains(r.Stderr, "carries node 0's local-auth key") {
		t.Errorf("stderr does not say node 0's key is carried:\n%s", r.Stderr)
	}

	ctx := context.Background()
	cs := k.Clientset(t)
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["ec-public-key.pem"]) != string(pubPEM) || string(sec.Data["ec-private-key.pem"]) != string(privPEM) {
		t.Fatal("cluster 0's local-auth Secret does not hold node 0's key pair")
	}
	if _, err := cs.CoreV1().Secrets("site-a-mce").Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node 0's Secret was applied as an object in its own namespace: %v", err)
	}
	// Node 0's tokens verify on cluster 0.
	clusterPub := sec.Data["ec-public-key.pem"]
	if got := acceptedBy(t, clusterPub, clusterTok); got != "cluster_id="+node0Cluster {
		t.Errorf("node 0's cluster token: %q", got)
	}
	if got := acceptedBy(t, clusterPub, infraTok); got != "infra_env_id="+node0Infra {
		t.Errorf("node 0's infra-env token: %q", got)
	}

	// Every status URL is on cluster 0's service and signed with the claim its
	// controller uses.
	got := bundleObjects(t, k, ns, id)
	get := func(kind string) *unstructured.Unstructured {
		for name, o := range got {
			if strings.HasPrefix(name, kind+"/") {
				return o
			}
		}
		t.Fatalf("no %s restored in %s", kind, ns)
		return nil
	}
	check := func(what, raw, wantPath, wantClaim string, wantQuery map[string]string) {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme+"://"+u.Host != serviceURL || u.Path != wantPath {
			t.Errorf("%s = %s, want %s%s", what, raw, serviceURL, wantPath)
			return
		}
		q := u.Query()
		for k, v := range wantQuery {
			if q.Get(k) != v {
				t.Errorf("%s: %s=%q, want %q", what, k, q.Get(k), v)
			}
		}
		if got := acceptedBy(t, clusterPub, q.Get("api_key")); got != wantClaim {
			t.Errorf("%s: api_key claim %q, want %q", what, got, wantClaim)
		}
	}
	aci, agent := get("AgentClusterInstall"), get("Agent")
	ev, _, _ := unstructured.NestedString(aci.Object, "status", "debugInfo", "eventsURL")
	check("ACI eventsURL", ev, "/api/assisted-install/v2/events", "cluster_id="+node0Cluster, map[string]string{"cluster_id": node0Cluster})
	lg, _, _ := unstructured.NestedString(aci.Object, "status", "debugInfo", "logsURL")
	check("ACI logsURL", lg, "/api/assisted-install/v2/clusters/"+node0Cluster+"/logs", "cluster_id="+node0Cluster, nil)
	ev, _, _ = unstructured.NestedString(agent.Object, "status", "debugInfo", "eventsURL")
	check("Agent eventsURL", ev, "/api/assisted-install/v2/events", "infra_env_id="+node0Infra, map[string]string{"host_id": agent.GetName()})
	lg, _, _ = unstructured.NestedString(agent.Object, "status", "debugInfo", "logsURL")
	check("Agent logsURL", lg, "/api/assisted-install/v2/clusters/"+node0Cluster+"/logs", "cluster_id="+node0Cluster,
		map[string]string{"host_id": agent.GetName(), "logs_type": "host"})

	// A rerun with the same arguments exits 0 and rewrites nothing.
	versions := func() map[string]string {
		out := map[string]string{}
		for name, o := range bundleObjects(t, k, ns, id) {
			out[name] = o.GetResourceVersion()
		}
		return out
	}
	before := versions()
	r2 := p.Run(t, args...)
	if r2.ExitCode != 0 {
		t.Fatalf("rerun: exit %d\n%s", r2.ExitCode, r2.Combined())
	}
	for _, ph := range parseRestore(t, r2).Phases {
		if ph.Ran {
			t.Errorf("rerun ran phase %s", ph.Phase)
		}
	}
	if after := versions(); !equalMaps(before, after) {
		t.Errorf("the rerun changed objects:\nbefore %v\nafter  %v", before, after)
	}
	sec2, _ := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{})
	if sec2.ResourceVersion != sec.ResourceVersion {
		t.Error("the rerun rewrote the local-auth Secret")
	}
}

// An Agent events URL that names only host_id, with no api_key (node 0 ran
// AUTH_TYPE none or rhsso) and no InfraEnv of the Agent in the bundle: nothing
// tells which infra-env to sign it for on cluster 0. The restore refuses while
// planning, before it contacts cluster 0 or writes anything (the API server in
// the kubeconfig is not even listening).
func TestHandover_UnsignableURLRefusedBeforeAnyWrite(t *testing.T) {
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	agent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
		"metadata": map[string]any{"name": agentID, "namespace": "demo", "labels": map[string]any{"infraenvs.agent-install.openshift.io": "not-in-bundle"}},
		"spec":     map[string]any{"approved": true, "clusterDeploymentName": map[string]any{"name": "single-node", "namespace": "demo"}},
		"status": map[string]any{"debugInfo": map[string]any{
			"eventsURL": "https://assisted.site-a.example.com/api/assisted-install/v2/events?host_id=" + agentID}},
	}}
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "demo"}}}
	src := node0Database(t, assisted.Scale{Clusters: 1, Hosts: 1, Events: 5, InventoryBytes: 100})
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Resources: exportedObjects([]*unstructured.Unstructured{nsObj, agent})})
	target := emptyDatabase(t)
	dead := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := os.WriteFile(dead, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: mce}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--db", target.URL, "--skip-files",
		"--kubeconfig", dead, "-n", "mce", "--service-url", "https://assisted.c0.example.com")
	if r.ExitCode == 0 {
		t.Fatalf("restore succeeded\n%s", r.Combined())
	}
	t.Logf("refusal (exit %d): %s", r.ExitCode, r.Stderr)
	for _, want := range []string{"status.debugInfo.eventsURL", "infraenvs.agent-install.openshift.io", "nothing was changed"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "127.0.0.1:1") {
		t.Errorf("the restore contacted cluster 0 before refusing:\n%s", r.Stderr)
	}
	if n := userTables(t, target.URL); n != 0 {
		t.Errorf("the target database has %d tables after the refusal", n)
	}
}
