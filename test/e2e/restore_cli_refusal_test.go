package e2e

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreCLI_RefusalsChangeNothing: a non-empty database or data
// directory, a conflicting object on cluster 0, a wrong or missing identity,
// an unreachable cluster and CRs that match no row each stop the restore with
// their own exit code and a clear message, and leave the database, the data
// directory and the namespace exactly as they were.
func TestRestoreCLI_RefusalsChangeNothing(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	id := k.Namespace(t)
	identity, recipient := ageKey(t)
	otherIdentity, _ := ageKey(t)
	tiny := assisted.Scale{Clusters: 2, Hosts: 4, Events: 50, InventoryBytes: 500}
	dir := t.TempDir()
	good := "oci:" + filepath.Join(dir, "layout") + ":good"
	makeBundle(t, good, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{node0Database(t, tiny).URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)},
		Resources: exportedObjects(node0Export(t, id))})
	// CRs without their rows: node 0's database lacks the cluster they describe.
	noRows := "oci:" + filepath.Join(dir, "layout") + ":norows"
	makeBundle(t, noRows, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{assisted.NewDatabase(t, tiny).URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)},
		Resources: exportedObjects(node0Export(t, id))})

	unreachable := filepath.Join(dir, "unreachable.kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: nope}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		ref      string
		identity string
		setup    func(t *testing.T, ns string, db *harness.Database, dataDir string)
		// kubeconfig replaces the namespace's admin kubeconfig.
		kubeconfig string
		exit       int
		message    string
	}{
		{name: "database not empty", ref: good, identity: identity, exit: 20, message: "target database is not empty",
			setup: func(t *testing.T, _ string, db *harness.Database, _ string) {
				harness.LoadSQLFile(t, db.URL, harness.AssistedSchemaPath())
			}},
		{name: "data directory not empty", ref: good, identity: identity, exit: 20, message: "is not empty (it holds leftover)",
			setup: func(t *testing.T, _ string, _ *harness.Database, dataDir string) {
				if err := os.MkdirAll(dataDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dataDir, "leftover"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "conflicting ClusterDeployment", ref: good, identity: identity, exit: 21, message: "already exist on the target and differ",
			setup: func(t *testing.T, ns string, _ *harness.Database, _ string) {
				cd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
					"metadata": map[string]any{"name": "single-node", "namespace": ns},
					"spec": map[string]any{"baseDomain": "other.example.com", "clusterName": "someone-else",
						"platform": map[string]any{"agentBareMetal": map[string]any{"agentSelector": map[string]any{}}}}}}
				if _, err := k.Dynamic(t).Resource(gvrs["ClusterDeployment"]).Namespace(ns).Create(context.Background(), cd, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "wrong identity", ref: good, identity: otherIdentity, exit: 4, message: "wrong --identity"},
		{name: "no identity", ref: good, exit: 4, message: "no identity was given"},
		{name: "unreachable cluster", ref: good, identity: identity, kubeconfig: unreachable, exit: 25, message: "cannot reach the target cluster"},
		{name: "CRs without rows", ref: noRows, identity: identity, exit: 22, message: "no cluster row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := k.Namespace(t)
			db := emptyDatabase(t)
			dataDir := filepath.Join(t.TempDir(), "data")
			if tt.setup != nil {
				tt.setup(t, ns, db, dataDir)
			}
			beforeRows, beforeFiles, beforeSecrets := tableSums(t, db.URL), map[string]string{}, secretNames(t, k, ns)
			if _, err := os.Stat(dataDir); err == nil {
				beforeFiles = fileTree(t, dataDir)
			}
			kubeconfig := tt.kubeconfig
			if kubeconfig == "" {
				kubeconfig = k.KubeconfigFor(t, harness.AdminUser, ns)
			}
			args := []string{"restore", tt.ref, "--signer", signerFile(t), "--db", withPassword(t, db.URL, plantedDBPassword), "--data-dir", dataDir,
				"--kubeconfig", kubeconfig, "-n", ns, "--namespace-mapping", "spoke-cluster=" + ns + ",demo=" + ns + ",agents=" + ns}
			if tt.identity != "" {
				args = append(args, "--identity", tt.identity)
			}
			r := p.Run(t, args...)
			if r.ExitCode != tt.exit || !strings.Contains(r.Stderr, tt.message) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.ExitCode, tt.exit, tt.message, r.Combined())
			}
			if tt.exit != 4 && !strings.Contains(r.Stderr, "nothing was changed") {
				t.Errorf("the refusal does not say that nothing was changed:\n%s", r.Stderr)
			}
			if strings.Contains(r.Combined(), plantedDBPassword) {
				t.Errorf("the database password leaked:\n%s", r.Combined())
			}

			// Nothing changed anywhere.
			if after := tableSums(t, db.URL); !reflect.DeepEqual(after, beforeRows) {
				t.Errorf("the database changed: %v -> %v", beforeRows, after)
			}
			afterFiles := map[string]string{}
			if _, err := os.Stat(dataDir); err == nil {
				afterFiles = fileTree(t, dataDir)
			}
			if !reflect.DeepEqual(afterFiles, beforeFiles) {
				t.Errorf("the data directory changed: %v -> %v", beforeFiles, afterFiles)
			}
			if cms := journalConfigMaps(t, k, ns); len(cms) != 0 {
				t.Errorf("journal or receipt written: %v", cms)
			}
			if after := secretNames(t, k, ns); !reflect.DeepEqual(after, beforeSecrets) {
				t.Errorf("Secrets changed: %v -> %v", beforeSecrets, after)
			}
			if objs := bundleObjects(t, k, ns, id); len(objs) != 0 {
				t.Errorf("objects created: %v", keys(objs))
			}
		})
	}
}

// TestRestoreCLI_SkipResourcesThenResources: a restore of the database and
// files alone already writes the exported CRs' kube keys (whoever applies the
// CRs needs them first); the same restore run again without --skip-resources
// resumes its journal and only applies the resources.
func TestRestoreCLI_SkipResourcesThenResources(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	ns := k.Namespace(t)
	id := ns
	identity, recipient := ageKey(t)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{node0Database(t, assisted.Scale{Clusters: 1, Hosts: 2, Events: 10, InventoryBytes: 200}).URL},
		Files:    &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}, Resources: exportedObjects(node0Export(t, id))})
	db := emptyDatabase(t)
	args := []string{"restore", ref, "--signer", signerFile(t), "--identity", identity, "--db", db.URL, "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "--namespace-mapping", "spoke-cluster=" + ns + ",demo=" + ns + ",agents=" + ns, "-o", "json"}

	r := p.Run(t, append(args, "--skip-resources")...)
	if r.ExitCode != 0 {
		t.Fatalf("--skip-resources: exit %d\n%s", r.ExitCode, r.Combined())
	}
	if res := parseRestore(t, r); phaseNames(res) != "database,files,auth" || res.ResourcesFrom != "skipped" {
		t.Fatalf("phases %s, resources %s", phaseNames(res), res.ResourcesFrom)
	}
	if got := keysOf(t, db.Connect(t), `SELECT kube_key_name, kube_key_namespace FROM clusters WHERE id = '`+node0Cluster+`'`); got != "single-node|"+ns {
		t.Errorf("kube key after --skip-resources: %s", got)
	}
	if objs := bundleObjects(t, k, ns, id); len(objs) != 0 {
		t.Fatalf("--skip-resources created %v", keys(objs))
	}

	r = p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("then with resources: exit %d\n%s", r.ExitCode, r.Combined())
	}
	res := parseRestore(t, r)
	if phaseNames(res) != "database(earlier),files(earlier),auth(earlier),resources" || !res.Resumed || res.Resources.Counts["created"] != 10 {
		t.Fatalf("phases %s, resumed %v, resources %+v", phaseNames(res), res.Resumed, res.Resources)
	}
	if res.Receipt == nil || strings.Join(res.Receipt.Phases, ",") != "database,files,auth,resources" {
		t.Errorf("receipt %+v", res.Receipt)
	}
}
