package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreCLI_DatabaseWithoutInfraEnvsIntoCluster0 restores, with a
// cluster (a kubeconfig and a namespace), a bundle whose database is not
// assisted-service's: one table, no infra_envs. The discovery-image reset that
// cluster 0's service needs (restore/database.go regenerateImageURLs) applies
// only to a database that has public.infra_envs, decided from the bundle's
// metadata; it used to run unconditionally and fail the restore after the
// whole load ("relation infra_envs does not exist").
func TestRestoreCLI_DatabaseWithoutInfraEnvsIntoCluster0(t *testing.T) {
	t.Parallel()
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	reg := harness.StartInProcessRegistry(t)
	ns := k.Namespace(t)
	identity, recipient := ageKey(t)
	src := harness.NewDatabase(t)
	src.Exec(t, `CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL);
		INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 500) g;`)
	ref := reg.Ref("assisted/minimal", "v1")
	digest := makeBundle(t, ref, oci.RegistryOptions{PlainHTTP: true}, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})

	target := emptyDatabase(t)
	r := p.Run(t, "restore", ref, "--plain-http", "--signer", signerFile(t), "--identity", identity,
		"--db", target.URL, "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "--skip-resources", "-o", "json")
	if r.ExitCode != 0 {
		t.Fatalf("restore of a database without infra_envs, with a cluster: exit %d\n%s", r.ExitCode, r.Combined())
	}
	res := parseRestore(t, r)
	if res.Digest != digest || res.Receipt == nil || !strings.Contains(phaseNames(res), "database") {
		t.Fatalf("result: digest %s (want %s), phases %s, receipt %+v", res.Digest, digest, phaseNames(res), res.Receipt)
	}
	if got, want := tableSums(t, target.URL), tableSums(t, src.URL); got["notes"] != want["notes"] || len(got) != 1 {
		t.Errorf("restored tables %v, node 0 had %v", got, want)
	}
}
