package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// writeManifests writes a scenario's objects as ABI's manifest folder holds
// them (cluster-deployment.yaml, ...), after edit.
func writeManifests(t *testing.T, s assisted.Scenario, edit func(o *unstructured.Unstructured)) string {
	t.Helper()
	dir := t.TempDir()
	fileOf := map[string]string{}
	for file, kind := range recreate.ManifestFiles {
		fileOf[kind] = file
	}
	docs := map[string][]string{}
	for _, o := range s.Objects {
		file := fileOf[o.GetKind()]
		if file == "" || (o.GetKind() == "Secret" && !strings.HasSuffix(o.GetName(), "-pull-secret")) {
			continue
		}
		o = o.DeepCopy()
		if edit != nil {
			edit(o)
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs[file] = append(docs[file], string(b))
	}
	for file, d := range docs {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(d, "---\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// postgresSecret creates the operator's postgres Secret in ns naming db.
func postgresSecret(t *testing.T, k *harness.Kube, ns string, db *harness.Database) {
	t.Helper()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "postgres", Namespace: ns}, StringData: map[string]string{
		"db.host": cfg.Host, "db.port": fmt.Sprint(cfg.Port), "db.user": cfg.User, "db.password": plantedDBPassword, "db.name": cfg.Database}}
	if _, err := k.Clientset(t).CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreCLI_RecreateFromRows: a bundle of a node 0 without a Kubernetes
// API (its resources layer holds the install manifests, made by `bundle
// create --manifests-dir`) is restored with CRs re-created from the manifests
// and the restored rows: the database named by the operator's postgres
// Secret, the kube keys written, every object accepted by the real CRDs. `--diff` exits like
// diff(1): 0 when the CRs agree with the rows, 1 (listing the field) when an
// install manifest disagrees; the restore then refuses (23) without changing
// anything, and applies with --accept-drift.
func TestRestoreCLI_RecreateFromRows(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	s := assisted.Scenarios()[0]
	src := harness.NewDatabase(t)
	assisted.LoadSchema(t, src.URL)
	if err := assisted.InsertScenario(context.Background(), src.Connect(t), s); err != nil {
		t.Fatal(err)
	}
	// Node 0 without an API: `bundle create` stores its install manifests as
	// the resources layer; the restore re-creates the CRs from them and the rows.
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	created := p.Run(t, "bundle", "create", "--to", ref, "--db", src.URL, "--data-dir", assistedData(t, plantedKubeadmin),
		"--manifests-dir", writeManifests(t, s, nil), "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json")
	if created.ExitCode != 0 {
		t.Fatalf("bundle create: exit %d\n%s", created.ExitCode, created.Combined())
	}
	digest := parseCreate(t, created.Stdout).Digest

	t.Run("diff without drift", func(t *testing.T) {
		// The rows agree with the CRs; the one field that differs from node
		// 0's manifests is the hold the restore adds: ABI's node 0 started
		// the installation itself, nothing on cluster 0 may.
		scratch := emptyDatabase(t)
		r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--db", scratch.URL, "-o", "json")
		var diffs []recreate.Difference
		if r.ExitCode != 1 || json.Unmarshal([]byte(r.Stdout), &diffs) != nil || len(diffs) != 1 ||
			diffs[0].Against != "manifests" || diffs[0].Field != "spec.holdInstallation" || diffs[0].Object != true {
			t.Fatalf("--diff: exit %d, want 1 and the hold only\n%s", r.ExitCode, r.Combined())
		}
		if n := userTables(t, scratch.URL); n != 0 {
			t.Errorf("--diff left %d tables", n)
		}
	})

	ns := k.Namespace(t)
	target := emptyDatabase(t)
	postgresSecret(t, k, ns, target)
	kubeconfig := k.KubeconfigFor(t, harness.AdminUser, ns)
	r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--data-dir", filepath.Join(t.TempDir(), "data"), "--kubeconfig", kubeconfig, "-n", ns,
		"--namespace-mapping", "cluster0="+ns, "-o", "json")
	if r.ExitCode != 0 {
		t.Fatalf("restore: exit %d\n%s", r.ExitCode, r.Combined())
	}
	res := parseRestore(t, r)
	if res.ResourcesFrom != "recreated" || phaseNames(res) != "database,files,auth,resources" || res.Digest != digest {
		t.Fatalf("result: from %s, phases %s", res.ResourcesFrom, phaseNames(res))
	}
	// The rows carry the kube keys of the objects that now exist.
	conn := target.Connect(t)
	var cdName, cdNS string
	wantCD := one(s.Objects, "ClusterDeployment").GetName() // the bundled manifest's name
	if err := conn.QueryRow(context.Background(), `SELECT kube_key_name, kube_key_namespace FROM clusters`).Scan(&cdName, &cdNS); err != nil || cdNS != ns || cdName != wantCD {
		t.Fatalf("cluster kube key %s/%s (%v), want %s/%s", cdNS, cdName, err, ns, wantCD)
	}
	dyn := k.Dynamic(t)
	if _, err := dyn.Resource(gvrs["ClusterDeployment"]).Namespace(ns).Get(context.Background(), cdName, metav1.GetOptions{}); err != nil {
		t.Fatalf("ClusterDeployment %s: %v", cdName, err)
	}
	agents, err := dyn.Resource(resources["Agent"]).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(agents.Items) != len(s.Hosts) {
		t.Fatalf("Agents: %v, want %d", err, len(s.Hosts))
	}
	var unkeyed int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM hosts WHERE kube_key_namespace IS DISTINCT FROM $1`, ns).Scan(&unkeyed); err != nil || unkeyed != 0 {
		t.Errorf("%d hosts without the kube key (%v)", unkeyed, err)
	}
	if strings.Contains(r.Combined(), plantedDBPassword) || strings.Contains(r.Combined(), assisted.ScenarioPullSecret) {
		t.Error("a secret leaked into the output")
	}
	// Node 0 ran without an API and started the installation itself: the
	// re-created ACI is on hold, and the InfraEnv keeps the manifest's selector.
	aci, err := dyn.Resource(resources["AgentClusterInstall"]).Namespace(ns).Get(context.Background(), wantCD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hold, _, _ := unstructured.NestedBool(aci.Object, "spec", "holdInstallation"); !hold {
		t.Error("the re-created AgentClusterInstall of an installing REST-mode cluster is not on hold")
	}
	wantIE := one(s.Objects, "InfraEnv")
	ie, err := dyn.Resource(resources["InfraEnv"]).Namespace(ns).Get(context.Background(), wantIE.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ie.Object["spec"].(map[string]any)["nmStateConfigLabelSelector"], wantIE.Object["spec"].(map[string]any)["nmStateConfigLabelSelector"]; want != nil && !reflect.DeepEqual(got, want) {
		t.Errorf("nmStateConfigLabelSelector %v, the manifest had %v", got, want)
	}

	t.Run("no resources layer: re-created automatically, dry run", func(t *testing.T) {
		bare := "oci:" + filepath.Join(t.TempDir(), "layout") + ":bare"
		makeBundle(t, bare, bundleRegistryNone, recipient, bundle.CreateOptions{Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})
		ns := k.Namespace(t)
		db := emptyDatabase(t)
		dataDir := filepath.Join(t.TempDir(), "data")
		r := p.Run(t, "restore", bare, "--signer", signerFile(t), "--identity", identity, "--db", db.URL, "--data-dir", dataDir, "--dry-run=server",
			"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "-o", "json")
		if r.ExitCode != 0 {
			t.Fatalf("dry run: exit %d\n%s", r.ExitCode, r.Combined())
		}
		res := parseRestore(t, r)
		if res.ResourcesFrom != "recreated" || res.Database == nil || !res.Database.RolledBack || res.Resources == nil ||
			res.Resources.Counts["created"] < 5 || res.Resources.Counts["failed"] != 0 || len(res.Phases) != 0 {
			t.Fatalf("dry run result: %s", r.Stdout)
		}
		if n := userTables(t, db.URL); n != 0 || len(journalConfigMaps(t, k, ns)) != 0 || len(secretNames(t, k, ns)) != 0 {
			t.Fatalf("the dry run wrote: %d tables, journal %v, secrets %v", n, journalConfigMaps(t, k, ns), secretNames(t, k, ns))
		}
		if _, err := os.Stat(dataDir); err == nil {
			t.Error("the dry run created the data directory")
		}
		cds, err := k.Dynamic(t).Resource(gvrs["ClusterDeployment"]).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(cds.Items) != 0 {
			t.Errorf("the server dry run persisted ClusterDeployments: %v %v", err, cds)
		}
	})

	// An install manifest that disagrees with the rows.
	drifted := writeManifests(t, s, func(o *unstructured.Unstructured) {
		if o.GetKind() == "InfraEnv" {
			_ = unstructured.SetNestedField(o.Object, "ssh-rsa AAAA drifted", "spec", "sshAuthorizedKey")
		}
	})
	t.Run("diff with drift", func(t *testing.T) {
		scratch := emptyDatabase(t)
		r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--manifests-dir", drifted, "--db", scratch.URL, "-o", "json")
		var diffs, db []recreate.Difference
		if r.ExitCode != 1 || json.Unmarshal([]byte(r.Stdout), &diffs) != nil {
			t.Fatalf("--diff: exit %d, want 1\n%s", r.ExitCode, r.Combined())
		}
		for _, d := range diffs {
			if d.Against == "database" {
				db = append(db, d)
			}
		}
		if len(db) != 1 || db[0].Field != "spec.sshAuthorizedKey" {
			t.Fatalf("--diff: want the one difference with the rows\n%s", r.Combined())
		}
		human := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--diff", "--manifests-dir", drifted, "--db", scratch.URL)
		if human.ExitCode != 1 || !strings.Contains(human.Stdout, "spec.sshAuthorizedKey") {
			t.Fatalf("--diff: exit %d\n%s", human.ExitCode, human.Combined())
		}
	})
	t.Run("drift refused, then accepted", func(t *testing.T) {
		ns := k.Namespace(t)
		db := emptyDatabase(t)
		dataDir := filepath.Join(t.TempDir(), "data")
		args := []string{"restore", ref, "--signer", signerFile(t), "--identity", identity, "--recreate-resources", "--manifests-dir", drifted, "--db", db.URL,
			"--data-dir", dataDir, "--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "--namespace-mapping", "cluster0=" + ns}
		r := p.Run(t, args...)
		if r.ExitCode != 23 || !strings.Contains(r.Stderr, "spec.sshAuthorizedKey") {
			t.Fatalf("exit %d, want 23 (drift)\n%s", r.ExitCode, r.Combined())
		}
		if n := userTables(t, db.URL); n != 0 || len(journalConfigMaps(t, k, ns)) != 0 {
			t.Fatalf("the refused restore left %d tables and journal %v", n, journalConfigMaps(t, k, ns))
		}
		if _, err := os.Stat(dataDir); err == nil {
			t.Error("the refused restore created the data directory")
		}
		r = p.Run(t, append(args, "--accept-drift")...)
		if r.ExitCode != 0 || !strings.Contains(r.Stderr, "warning: 1 field(s) of the re-created resources disagree") {
			t.Fatalf("--accept-drift: exit %d\n%s", r.ExitCode, r.Combined())
		}
	})
}
