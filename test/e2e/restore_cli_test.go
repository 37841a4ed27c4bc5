package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	crs "github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Planted secrets: none of them may appear in any output of the restore.
const (
	plantedDBPassword = "Db-Passw0rd-PLANTED-restore"
	plantedKubeadmin  = "kubeadmin-PLANTED-restore"
)

// withPassword returns the database URL with a password (the machine's
// PostgreSQL trusts loopback, so any password connects).
func withPassword(t *testing.T, raw, password string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// TestRestoreCLI_ExportedBundleIntoCluster0 runs `kubectl assisted restore`
// from a registry into a real PostgreSQL database, a data directory and the
// real kube-apiserver with the CRDs, and checks every part of the end state,
// the order the API server saw, the receipt that `wait-for` accepts, a rerun
// that finds everything done, and that no secret leaks into any output.
func TestRestoreCLI_ExportedBundleIntoCluster0(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	reg := harness.StartInProcessRegistry(t)
	ns := k.Namespace(t)
	id := ns
	hook := startOrderWebhook(t, k, id, ns)
	identity, recipient := ageKey(t)
	src := node0Database(t, assisted.Small)
	data := assistedData(t, plantedKubeadmin)
	ref := reg.Ref("assisted/node0", "v1")
	digest := makeBundle(t, ref, oci.RegistryOptions{PlainHTTP: true}, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: data}, Resources: exportedObjects(node0Export(t, id))})

	target := emptyDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	const serviceURL = "https://assisted-service-multicluster-engine.apps.cluster0.example.com"
	kubeconfig := k.KubeconfigFor(t, harness.AdminUser, ns)
	args := []string{"restore", ref, "--plain-http", "--signer", signerFile(t), "--identity", identity,
		"--db", withPassword(t, target.URL, plantedDBPassword), "--data-dir", dataDir,
		"--kubeconfig", kubeconfig, "-n", ns, "--namespace-mapping", "spoke-cluster=" + ns + ",demo=" + ns, "--namespace-mapping", "agents=" + ns,
		"--service-url", serviceURL}
	first := p.Run(t, append(args, "-o", "json")...)
	if first.ExitCode != 0 {
		t.Fatalf("restore: exit %d\n%s", first.ExitCode, first.Combined())
	}
	res := parseRestore(t, first)
	if res.Digest != digest || phaseNames(res) != "database,files,auth,resources" || res.ResourcesFrom != "bundle" || res.Resumed {
		t.Fatalf("result: digest %s (want %s), phases %s, from %s, resumed %v", res.Digest, digest, phaseNames(res), res.ResourcesFrom, res.Resumed)
	}
	if res.Receipt == nil || res.Receipt.BundleDigest != digest || strings.Join(res.Receipt.Phases, ",") != "database,files,auth,resources" {
		t.Fatalf("receipt = %+v", res.Receipt)
	}
	if res.Resources == nil || res.Resources.Counts["created"] != 10 || res.Resources.Counts["failed"] != 0 {
		t.Fatalf("resources = %+v", res.Resources)
	}
	if res.Phases[0].Counts["kubeKeys"] != 3 || res.Phases[0].Counts["rows"] < 3000 {
		t.Errorf("database counts = %v", res.Phases[0].Counts)
	}
	for _, want := range []string{"check: bundle " + digest + " verified", "check: target database is empty", "database: done in", "resources: done in", "receipt"} {
		if !strings.Contains(first.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, first.Stderr)
		}
	}

	// Database: every table as node 0 had it (release_images, a cache, is
	// left out), plus the kube keys of the CRs.
	keyCols := []string{"kube_key_name", "kube_key_namespace"}
	want, got := tableSums(t, src.URL, keyCols...), tableSums(t, target.URL, keyCols...)
	delete(want, "release_images")
	for tb := range want {
		if tb == "infra_envs" {
			continue // its name becomes the InfraEnv's: checked below
		}
		if got[tb] != want[tb] {
			t.Errorf("table %s: restored %s, node 0 had %s", tb, got[tb], want[tb])
		}
	}
	if len(got) != len(want) {
		t.Errorf("restored tables %d, want %d", len(got), len(want))
	}
	conn := target.Connect(t)
	for sql, want := range map[string]string{
		`SELECT kube_key_name, kube_key_namespace FROM clusters WHERE id = '` + node0Cluster + `'`: "single-node|" + ns,
		`SELECT name, kube_key_namespace FROM infra_envs WHERE id = '` + node0Infra + `'`:          "myinfraenv|" + ns,
		`SELECT infra_env_id, kube_key_namespace FROM hosts WHERE id = '` + agentID + `'`:          node0Infra + "|" + ns,
	} {
		if got := keysOf(t, conn, sql); got != want {
			t.Errorf("%s: got %s, want %s", sql, got, want)
		}
	}
	// Discovery images: every infra-env node 0 had generated is marked not
	// generated, its URL kept, so cluster 0's service builds a new URL on
	// its own image service (assisted-service release-4.19 inventory.go
	// updateExternalImageInfo keeps download_url while generated is true).
	const generated = `SELECT count(*) FROM infra_envs WHERE generated`
	const urls = `SELECT count(*) FROM infra_envs WHERE download_url <> ''`
	srcConn := src.Connect(t)
	count := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, sql string) string {
		t.Helper()
		var n int64
		if err := q.QueryRow(context.Background(), sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return fmt.Sprint(n)
	}
	srcGenerated := count(srcConn, generated)
	if srcGenerated == "0" {
		t.Fatal("fixture: node 0 has no generated infra-env; the check below would prove nothing")
	}
	if got := count(conn, generated); got != "0" {
		t.Errorf("restored infra-envs still generated: %s", got)
	}
	if got, want := count(conn, urls), count(srcConn, urls); got != want {
		t.Errorf("infra-envs with a download URL: %s, node 0 had %s", got, want)
	}
	if got := fmt.Sprint(res.Phases[0].Counts["imageURLsReset"]); got != srcGenerated {
		t.Errorf("database count imageURLsReset = %s, want %s", got, srcGenerated)
	}

	// Files: the same tree with modes, times and the origin xattr; nothing staged left.
	wantFiles := fileTree(t, data)
	delete(wantFiles, "installercache")
	delete(wantFiles, "installercache/openshift-install-4.16")
	gotFiles := fileTree(t, dataDir)
	for name, w := range wantFiles {
		if gotFiles[name] != w {
			t.Errorf("file %s: restored %q, node 0 had %q", name, gotFiles[name], w)
		}
	}
	if len(gotFiles) != len(wantFiles) {
		t.Errorf("restored %d entries, want %d: %v", len(gotFiles), len(wantFiles), gotFiles)
	}

	// Resources: in order, owners re-linked, no node-0 URL, cluster 0 protected.
	if len(hook.denied) != 0 || len(hook.Created()) != 10 {
		t.Fatalf("order webhook: admitted %v, denied %v", hook.Created(), hook.denied)
	}
	stepOf := map[string]int{}
	for i, s := range crs.Order {
		stepOf[s.Kind] = i
	}
	last := -1
	for _, c := range hook.Created() {
		if step := stepOf[strings.SplitN(c, "/", 2)[0]]; step < last {
			t.Errorf("admitted %s after a later step: %v", c, hook.Created())
		} else {
			last = step
		}
	}
	objs := bundleObjects(t, k, ns, id)
	cd, ie := objs["ClusterDeployment/single-node"], objs["InfraEnv/myinfraenv"]
	agent, aci := objs["Agent/"+agentID], objs["AgentClusterInstall/test-agent-cluster-install"]
	if cd == nil || ie == nil || agent == nil || aci == nil {
		t.Fatalf("restored objects: %v", keys(objs))
	}
	if refs := agent.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != ie.GetUID() {
		t.Errorf("Agent owners %+v, want InfraEnv uid %s", refs, ie.GetUID())
	}
	if refs := aci.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != cd.GetUID() {
		t.Errorf("ACI owners %+v, want CD uid %s", refs, cd.GetUID())
	}
	if v, _, _ := unstructured.NestedBool(cd.Object, "spec", "preserveOnDelete"); !v {
		t.Error("cluster 0's ClusterDeployment lacks spec.preserveOnDelete")
	}
	if agent.GetAnnotations()["agent.agent-install.openshift.io/skip-spoke-cleanup"] != "true" {
		t.Error("Agent lacks skip-spoke-cleanup")
	}
	for name, o := range objs {
		b, _ := json.Marshal(o.Object)
		for _, h := range node0Hosts {
			if strings.Contains(string(b), h) {
				t.Errorf("%s keeps node 0's %s", name, h)
			}
		}
		if o.GetAnnotations()[crs.AnnotationBundleDigest] != digest {
			t.Errorf("%s lacks the bundle digest annotation", name)
		}
	}
	if u, _, _ := unstructured.NestedString(aci.Object, "status", "debugInfo", "eventsURL"); !strings.HasPrefix(u, serviceURL+"/") || !strings.Contains(u, "api_key=") {
		t.Errorf("ACI eventsURL = %q, want it on %s and signed", u, serviceURL)
	}

	// Secrets the operator adopts: postgres with the target's credentials,
	// local auth with a key pair.
	cs := k.Clientset(t)
	pgSecret, err := cs.CoreV1().Secrets(ns).Get(context.Background(), "postgres", metav1.GetOptions{})
	if err != nil || string(pgSecret.Data["db.password"]) != plantedDBPassword || string(pgSecret.Data["db.name"]) != target.Name {
		t.Errorf("postgres Secret: %v %v", err, pgSecret.Data["db.name"])
	}
	la, err := cs.CoreV1().Secrets(ns).Get(context.Background(), "assisted-servicelocal-auth", metav1.GetOptions{})
	if err != nil || !strings.Contains(string(la.Data["ec-private-key.pem"]), "EC PRIVATE KEY") {
		t.Errorf("local-auth Secret: %v", err)
	}

	// Node 0's wait-for accepts the receipt.
	wait := p.Run(t, "wait-for", "restore-complete", "--kubeconfig", kubeconfig, "-n", ns, "--bundle", digest, "--timeout", "20s")
	if wait.ExitCode != 0 {
		t.Fatalf("wait-for: exit %d\n%s", wait.ExitCode, wait.Combined())
	}

	// A rerun finds everything done and changes nothing.
	before := tableSums(t, target.URL)
	again := p.Run(t, args...)
	if again.ExitCode != 0 {
		t.Fatalf("rerun: exit %d\n%s", again.ExitCode, again.Combined())
	}
	for _, want := range []string{"database: done by an earlier run", "files: done by an earlier run", "resources: done by an earlier run"} {
		if !strings.Contains(again.Stderr, want) {
			t.Errorf("rerun stderr lacks %q:\n%s", want, again.Stderr)
		}
	}
	if !strings.Contains(again.Stdout, "wait-for restore-complete -n "+ns+" --bundle "+digest) {
		t.Errorf("rerun stdout lacks the wait-for hint:\n%s", again.Stdout)
	}
	if after := tableSums(t, target.URL); !equalMaps(before, after) {
		t.Error("the rerun changed the database")
	}

	// No secret in any output, nor in the journal and receipt.
	var cms []string
	for _, name := range journalConfigMaps(t, k, ns) {
		cm, _ := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		b, _ := json.Marshal(cm.Data)
		cms = append(cms, string(b))
	}
	idKey, _ := os.ReadFile(identity)
	outputs := strings.Join(append([]string{first.Combined(), again.Combined(), wait.Combined()}, cms...), "\n")
	for _, secret := range []string{plantedDBPassword, plantedKubeadmin, k.Users[harness.AdminUser].Token, strings.TrimSpace(string(idKey)), assistedPullSecretB64(t), "a3ViZWNvbmZpZy1wbGFudGVk"} {
		if secret != "" && strings.Contains(outputs, secret) {
			t.Errorf("a planted secret leaked into the output: %.12s...", secret)
		}
	}
}

// assistedPullSecretB64 is the fixture pull secret's data as stored in the Secret.
func assistedPullSecretB64(t *testing.T) string {
	t.Helper()
	objs, err := harness.ReadObjects(filepath.Join(harness.ExampleCRsDir(), "pullsecret.yaml"))
	if err != nil || len(objs) == 0 {
		t.Fatal(err)
	}
	for _, field := range []string{"data", "stringData"} {
		if m, ok, _ := unstructured.NestedStringMap(objs[0].Object, field); ok {
			for _, v := range m {
				if len(v) > 20 {
					return v
				}
			}
		}
	}
	return ""
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
