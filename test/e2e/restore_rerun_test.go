package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// dbRecords is the journal and receipt rows a restore without a cluster keeps
// in the target database (schema kubectl_assisted), by name.
func dbRecords(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT name, role || ' ' || data::text FROM kubectl_assisted.restore_records ORDER BY name`)
	if err != nil {
		t.Fatalf("read the restore's records: %v", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		out[n] = d
	}
	return out
}

func noReportInCwd(t *testing.T, p *harness.Plugin) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(p.Home, "report.json")); err == nil {
		t.Error("a report.json was written into the working directory without --report")
	}
}

// A database-and-files restore without cluster 0 (--no-cluster): node 0's
// data restored elsewhere to read its logs when cluster 0 never came up. The
// journal and receipt live in the target database; a rerun with the same
// arguments exits 0 and changes nothing (rows, files, journal, receipt).
func TestRestoreCLI_NoClusterRerunIsANoOp(t *testing.T) {
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	src := node0Database(t, assisted.Scale{Clusters: 1, Hosts: 3, Events: 20, InventoryBytes: 300})
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})
	target := emptyDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	args := []string{"restore", ref, "--signer", signerFile(t), "--identity", identity, "--no-cluster", "--db", target.URL, "--data-dir", dataDir, "-o", "json"}

	first := parseRestore(t, p.MustRun(t, args...))
	if got := phaseNames(first); got != "database,files" {
		t.Fatalf("phases = %s, want database,files", got)
	}
	if first.Receipt == nil || strings.Join(first.Receipt.Phases, ",") != "database,files" {
		t.Fatalf("receipt = %+v", first.Receipt)
	}
	want := tableSums(t, src.URL)
	// release_images is a cache the service reloads at start: the bundle
	// keeps its definition, not its rows (see bundle_db_test.go).
	delete(want, "release_images")
	if got := tableSums(t, target.URL); !equalMaps(want, got) {
		t.Fatalf("restored tables differ from node 0's:\n got %v\nwant %v", got, want)
	}
	recs := dbRecords(t, target.URL)
	if len(recs) != 2 {
		t.Fatalf("records in the target database = %v, want the journal and the receipt", recs)
	}
	for name, d := range recs {
		if !strings.Contains(d, first.Digest) {
			t.Errorf("record %s does not name the bundle %s: %s", name, first.Digest, d)
		}
	}
	tree, sums := fileTree(t, dataDir), tableSums(t, target.URL)

	r := p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.ExitCode, r.Combined())
	}
	second := parseRestore(t, r)
	if got := phaseNames(second); got != "database(earlier),files(earlier)" || !second.Resumed {
		t.Errorf("rerun phases = %s (resumed %v), want both done by the earlier run", got, second.Resumed)
	}
	if got := tableSums(t, target.URL); !equalMaps(sums, got) {
		t.Error("the rerun changed the database")
	}
	if got := fileTree(t, dataDir); !equalMaps(tree, got) {
		t.Error("the rerun changed the data directory")
	}
	if got := dbRecords(t, target.URL); !equalMaps(recs, got) {
		t.Errorf("the rerun changed the journal or receipt:\n got %v\nwant %v", got, recs)
	}
	noReportInCwd(t, p)

	// Without a database to keep the journal in, --no-cluster is a usage error.
	if r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--no-cluster", "--skip-database", "--data-dir", t.TempDir()); r.ExitCode != 2 {
		t.Errorf("--no-cluster --skip-database: exit %d, want 2\n%s", r.ExitCode, r.Combined())
	}
}

// The case: `--skip-files --skip-resources -n ns` twice, on a bundle
// without a resources layer. The second run exits 0 and changes nothing: no
// re-creation of resources (which were skipped), the receipt untouched.
func TestRestoreCLI_RerunSkipResourcesIsANoOp(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	ns := k.Namespace(t)
	identity, recipient := ageKey(t)
	src := node0Database(t, assisted.Scale{Clusters: 1, Hosts: 2, Events: 10, InventoryBytes: 200})
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{Database: pgDumpSource{src.URL}})
	target := emptyDatabase(t)
	args := []string{"restore", ref, "--signer", signerFile(t), "--identity", identity, "--db", target.URL, "--skip-files", "--skip-resources",
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "-o", "json"}

	first := parseRestore(t, p.MustRun(t, args...))
	cs := k.Clientset(t)
	receipts := func() map[string]string {
		out := map[string]string{}
		for _, name := range journalConfigMaps(t, k, ns) {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[name] = cm.ResourceVersion
		}
		return out
	}
	before, sums, secrets := receipts(), tableSums(t, target.URL), secretNames(t, k, ns)
	if len(before) == 0 {
		t.Fatal("no journal or receipt ConfigMap after the first run")
	}

	r := p.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("rerun: exit %d, want 0\n%s", r.ExitCode, r.Combined())
	}
	second := parseRestore(t, r)
	if second.Digest != first.Digest || !second.Resumed {
		t.Errorf("rerun: digest %s resumed %v", second.Digest, second.Resumed)
	}
	for _, ph := range second.Phases {
		if ph.Ran {
			t.Errorf("rerun ran phase %s again", ph.Phase)
		}
	}
	if got := receipts(); !equalMaps(before, got) {
		t.Errorf("the rerun wrote the journal or receipt again: %v -> %v", before, got)
	}
	if got := tableSums(t, target.URL); !equalMaps(sums, got) {
		t.Error("the rerun changed the database")
	}
	if got := secretNames(t, k, ns); strings.Join(got, ",") != strings.Join(secrets, ",") {
		t.Errorf("Secrets changed: %v -> %v", secrets, got)
	}
	noReportInCwd(t, p)
}
