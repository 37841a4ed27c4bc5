package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreCLI_DataDirWithoutXattrs restores onto a filesystem that refuses
// user.* extended attributes (ramfs, mounted in a private mount namespace):
// the restore completes, warns, and names the manifest that lost its origin
// mark, instead of failing or losing the mark silently.
func TestRestoreCLI_DataDirWithoutXattrs(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		harness.Unavailable(t, "unshare (util-linux)", err)
	}
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	ns := k.Namespace(t)
	identity, recipient := ageKey(t)
	src := node0Database(t, assisted.Scale{Clusters: 1, Hosts: 2, Events: 10, InventoryBytes: 200})
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})
	target := emptyDatabase(t)
	dataDir := filepath.Join(t.TempDir(), "ramfs")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := p.Command(ctx, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--db", target.URL, "--data-dir", dataDir, "--skip-resources",
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "-o", "json")
	// Mount ramfs over the data directory in a mount namespace of the
	// restore's own, then run it there; the listing proves what landed.
	script := `mount -t ramfs ramfs "$DATA" || exit 97; "$@"; rc=$?; ls "$DATA/` + bundleClusterID + `/manifests/openshift" >&2; exit $rc`
	nsArgs := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		nsArgs = append(nsArgs, "--map-root-user")
	}
	cmd.Args = append(append(append([]string{unshare}, nsArgs...), "sh", "-c", script, "sh"), cmd.Args...)
	cmd.Path = unshare
	cmd.Env = append(cmd.Env, "DATA="+dataDir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 97 || strings.Contains(stderr.String(), "unshare failed") {
		harness.Unavailable(t, "a ramfs mount in a private mount namespace", err)
	}
	if err != nil {
		t.Fatalf("restore onto ramfs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var res restoreResultJSON
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout.String())
	}
	lost := bundleClusterID + "/manifests/openshift/50-user.yaml"
	if res.Files == nil || len(res.Files.XattrsLost) != 1 || res.Files.XattrsLost[0] != lost {
		t.Fatalf("files result = %+v, want %s listed as having lost its xattr", res.Files, lost)
	}
	if !strings.Contains(stderr.String(), "warning: the filesystem of "+dataDir+" does not support user.* extended attributes") ||
		!strings.Contains(stderr.String(), lost) || !strings.Contains(stderr.String(), "50-user.yaml\n") {
		t.Errorf("stderr lacks the warning naming %s, or the file is missing:\n%s", lost, stderr.String())
	}
	if res.Receipt == nil || strings.Join(res.Receipt.Phases, ",") != "database,files,auth" {
		t.Errorf("receipt = %+v", res.Receipt)
	}
}
