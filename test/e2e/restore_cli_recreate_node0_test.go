package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreCLI_RecreateKeepsNode0CRs: node 0 ran assisted-service with a
// Kubernetes API. Its CRs live on a real kube-apiserver with the real CRDs
// (the installation on hold, an agentSelector, an nmStateConfigLabelSelector,
// agentLabels, labelled Agents with and without spec.hostname, no imageType),
// its rows carry their kube keys (test/assisted KubeAPIRows, facts cited
// there), and `bundle create --resources cluster` exports them. Restored with
// --recreate-resources, every object comes back as node 0 had it, in node 0's
// namespace, the rows' kube keys unchanged, and `--diff` finds nothing; a row
// changed by hand before the bundle, and an explicit namespace mapping, are
// listed field by field.
func TestRestoreCLI_RecreateKeepsNode0CRs(t *testing.T) {
	ctx := context.Background()
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	var s assisted.Scenario
	for _, sc := range assisted.Scenarios() {
		if sc.Name == "static" {
			s = sc
		}
	}
	node0NS := k.Namespace(t)
	stage := assisted.KubeAPI{Namespace: node0NS, ClusterStatus: "ready", HostStatus: "known"}
	dyn := k.Dynamic(t)
	live := createAll(t, dyn, node0NS, stage.Objects(s))

	src := harness.NewDatabase(t)
	assisted.LoadSchema(t, src.URL)
	rows, err := assisted.KubeAPIRows(s, stage)
	if err != nil {
		t.Fatal(err)
	}
	if err := assisted.InsertRows(ctx, src.Connect(t), rows); err != nil {
		t.Fatal(err)
	}
	// Node 0 runs assisted-service with local auth in node0NS, so the operator
	// made its key pair there (agentserviceconfig_controller.go
	// newAgentLocalAuthSecret); bundle create carries that one, whatever other
	// services share this API server.
	createNode0LocalAuth(t, k, node0NS)
	node0Kubeconfig := k.KubeconfigFor(t, harness.AdminUser, node0NS)
	bundleOf := func() string {
		ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
		r := p.Run(t, "bundle", "create", "--to", ref, "--db", src.URL, "--data-dir", assistedData(t, plantedKubeadmin),
			"--resources", "cluster", "--kubeconfig", node0Kubeconfig, "-n", node0NS, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json")
		if r.ExitCode != 0 {
			t.Fatalf("bundle create: exit %d\n%s", r.ExitCode, r.Combined())
		}
		return ref
	}
	ref := bundleOf()

	// Cluster 0 is another API server: node 0's objects are not on it.
	for _, o := range live {
		ri := dyn.Resource(resources[o.GetKind()])
		var err error
		if o.GetNamespace() == "" {
			err = ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		} else {
			err = ri.Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		}
		if err != nil {
			t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	t.Run("diff finds nothing", func(t *testing.T) {
		r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--db", emptyDatabase(t).URL, "--skip-files", "-o", "json")
		if r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "[]" {
			t.Fatalf("--diff: exit %d, want 0 and []\n%s", r.ExitCode, r.Combined())
		}
	})

	restoreNS := k.Namespace(t)
	target := emptyDatabase(t)
	postgresSecret(t, k, restoreNS, target)
	r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, restoreNS), "-n", restoreNS, "-o", "json")
	if r.ExitCode != 0 {
		t.Fatalf("restore: exit %d\n%s", r.ExitCode, r.Combined())
	}
	if res := parseRestore(t, r); res.ResourcesFrom != "recreated" {
		t.Fatalf("resources from %s", res.ResourcesFrom)
	}
	conn := target.Connect(t)
	var keyNS, keyName string
	if err := conn.QueryRow(ctx, `SELECT kube_key_namespace, kube_key_name FROM clusters`).Scan(&keyNS, &keyName); err != nil || keyNS != node0NS || keyName != "static" {
		t.Fatalf("cluster kube key %s/%s (%v): node 0's is %s/static, and it stays", keyNS, keyName, err, node0NS)
	}
	var moved int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM hosts WHERE kube_key_namespace IS DISTINCT FROM $1) +
		(SELECT count(*) FROM infra_envs WHERE kube_key_namespace IS DISTINCT FROM $1)`, node0NS).Scan(&moved); err != nil || moved != 0 {
		t.Fatalf("%d rows' kube keys moved (%v)", moved, err)
	}

	// Every object is back in node 0's namespace with node 0's fields; only
	// what the restore adds (its digest mark, cluster 0's safety) may be new.
	restoreAdded := map[string]bool{
		"* metadata.annotations.kubectl-assisted.io/bundle-digest":          true,
		"Agent metadata.annotations." + recreate.AnnotationSkipSpokeCleanup: true,
		"ClusterDeployment spec.preserveOnDelete":                           true,
	}
	for _, want := range live {
		ri := dyn.Resource(resources[want.GetKind()])
		var got *unstructured.Unstructured
		if want.GetNamespace() == "" {
			got, err = ri.Get(ctx, want.GetName(), metav1.GetOptions{})
		} else {
			got, err = ri.Namespace(node0NS).Get(ctx, want.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.Errorf("%s %s not re-created in node 0's namespace %s: %v", want.GetKind(), want.GetName(), node0NS, err)
			continue
		}
		w, g := comparable(want), comparable(got)
		for path := range union(w, g) {
			if reflect.DeepEqual(w[path], g[path]) || (w[path] == nil && (restoreAdded[want.GetKind()+" "+path] || restoreAdded["* "+path])) {
				continue
			}
			t.Errorf("%s %s %s = %v, node 0 had %v", want.GetKind(), want.GetName(), path, g[path], w[path])
		}
	}
	// The fields of the issue, named: nothing may start the installation.
	aci, err := dyn.Resource(resources["AgentClusterInstall"]).Namespace(node0NS).Get(ctx, "static", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hold, _, _ := unstructured.NestedBool(aci.Object, "spec", "holdInstallation"); !hold {
		t.Error("spec.holdInstallation was dropped: the controller would start the installation")
	}
	ie, err := dyn.Resource(resources["InfraEnv"]).Namespace(node0NS).Get(ctx, "static", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if it, found, _ := unstructured.NestedString(ie.Object, "spec", "imageType"); found {
		t.Errorf("spec.imageType %q appeared; node 0's InfraEnv had none", it)
	}

	t.Run("a row changed by hand and a namespace mapping are listed", func(t *testing.T) {
		host := s.Hosts[0]
		src.Exec(t, `UPDATE hosts SET requested_hostname = 'renamed-by-hand' WHERE id = $1`, host.ID)
		changed := bundleOf()
		r := p.Run(t, "restore", changed, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--db", emptyDatabase(t).URL, "--skip-files", "-o", "json")
		var diffs []recreate.Difference
		if r.ExitCode != 1 || json.Unmarshal([]byte(r.Stdout), &diffs) != nil || len(diffs) != 1 {
			t.Fatalf("--diff: exit %d, want 1 and one difference\n%s", r.ExitCode, r.Combined())
		}
		if d := diffs[0]; d.Kind != "Agent" || d.Name != host.ID || d.Field != "spec.hostname" || d.Against != "database" ||
			d.Object != host.Hostname || d.Database != "renamed-by-hand" {
			t.Errorf("difference %+v", d)
		}
		r = p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--db", emptyDatabase(t).URL, "--skip-files",
			"--namespace-mapping", node0NS+"=elsewhere", "-o", "json")
		diffs = nil
		if r.ExitCode != 1 || json.Unmarshal([]byte(r.Stdout), &diffs) != nil {
			t.Fatalf("--diff with a mapping: exit %d, want 1\n%s", r.ExitCode, r.Combined())
		}
		var cdMoved bool
		for _, d := range diffs {
			if d.Against != "exported" {
				t.Errorf("a mapping moved the rows and the CRs together, yet: %s", d)
			}
			if d.Kind == "ClusterDeployment" && d.Field == "metadata.namespace" && d.Node0 == node0NS && d.Object == "elsewhere" {
				cdMoved = true
			}
		}
		if !cdMoved {
			t.Errorf("the mapped namespace is not listed: %v", diffs)
		}
	})
}

// comparable flattens what a controller or a user set on an object: labels,
// annotations, spec, data and type, as leaf paths.
func comparable(o *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, e := range m {
				walk(prefix+"."+k, e)
			}
			return
		}
		if v != nil {
			out[prefix] = v
		}
	}
	md, _ := o.Object["metadata"].(map[string]any)
	walk("metadata.labels", md["labels"])
	walk("metadata.annotations", md["annotations"])
	for _, k := range []string{"spec", "data", "type"} {
		walk(k, o.Object[k])
	}
	return out
}

func union(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// createNode0LocalAuth creates the assisted-servicelocal-auth Secret of a
// service running in ns, with a fresh P-256 key pair.
func createNode0LocalAuth(t *testing.T, k *harness.Kube, ns string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-servicelocal-auth", Namespace: ns},
		Data: map[string][]byte{
			"ec-private-key.pem": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
			"ec-public-key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pubDER}),
		}}
	if _, err := k.Clientset(t).CoreV1().Secrets(ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
