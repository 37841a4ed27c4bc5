package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestJobMode_AtTheInstallersReboot is the production path from end to end:
// node 0 is a systemd container (the installer's units, its database, the
// service's /data), cluster 0 the test cluster with a real node and an
// infrastructure operator. Node 0 is armed with migrate --at-reboot, without
// --target-db: node 0 cannot reach cluster 0's database, so at the
// installer's reboot the migration runs as on a real install, with the
// restore Job on cluster 0's kubelet, and the reboot is held until cluster 0
// holds the receipt and the Job has ended. Then the pod the operator would
// create sees every row and file node 0 had.
func TestJobMode_AtTheInstallersReboot(t *testing.T) {
	c := harness.SharedCluster(t)
	s := &atRebootSites{scenario: assisted.Scenarios()[0], asc: true,
		serviceURL: "https://assisted-service-mce.apps.compact.example.com", kubeadminPwd: "KubeadminPw-" + fmt.Sprint(time.Now().UnixNano())}
	s.startNode0(t, harness.Node0Options{})

	// The registry on the node's address (the Job's pod pulls from it), its
	// CA and node 0's credential where podman and docker keep them.
	s.registry = harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true, IP: harness.NodeIP})
	c.TrustRegistry(t, s.registry)
	s.node.WriteFile(t, arCA, mustReadFile(t, s.registry.CAFile), 0o644)
	s.node.WriteFile(t, "/root/.docker/config.json", mustReadFile(t, s.registry.AuthFile), 0o600)

	// Cluster 0: its operator (PostgreSQL 12), volumes, the controller.
	s.kube = c.Kube
	s.ns, s.crNS, s.ctrlNS = c.Namespace(t), c.Namespace(t), c.Namespace(t)
	s.hostKubeconfig = c.KubeconfigFor(t, harness.AdminUser, s.ns)
	seedController(t, c.Kube, s.ctrlNS)
	js := &jobSites{c: c, major: 12, migrateSites: &migrateSites{kube: c.Kube, ns: s.ns}}
	c.StartOperator(t, s.ns, js.major, nil)
	class := "kat-" + s.ns
	c.LocalVolumes(t, class, "2Gi", "2Gi")
	cfg, err := clientcmd.LoadFromFile(s.hostKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.node.WriteFile(t, arKubeconfig, kc, 0o600)
	s.node.WriteFile(t, arASC, []byte(fmt.Sprintf(`apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata:
  name: agent
spec:
  databaseStorage: {storageClassName: %[1]s, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  filesystemStorage: {storageClassName: %[1]s, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, class)), 0o644)
	deleteASC(t, c.Kube)
	t.Cleanup(func() { deleteASC(t, c.Kube) })
	s.plugin = harness.NewPlugin(t)

	// Armed as the user does it on node 0, without the direct-restore flags.
	args := []string{harness.Node0Binary, "migrate", "--to", s.ref(), "--ca-file", arCA,
		"--db-env-file", harness.Node0EnvFile, "--data-dir", harness.Node0DataDir, "--manifests-dir", harness.Node0ManifestsDir,
		"--target-kubeconfig", arKubeconfig, "-n", s.ns, "--namespace-mapping", "cluster0=" + s.crNS,
		"--agent-service-config", arASC, "--service-url", s.serviceURL, "--controller-namespace", s.ctrlNS,
		"--state-dir", arStateDir, "--spool-dir", arSpoolDir, "--at-reboot", "--at-reboot-timeout", "8m", "-o", "json"}
	if r := s.node.ExecWith(t, harness.ExecOptions{Timeout: 2 * time.Minute}, args...); r.ExitCode != 0 {
		t.Fatalf("migrate --at-reboot (job mode) exited %d:\n%s", r.ExitCode, r.Combined())
	}
	want := s.snapshot(t)
	receipt := watchReceipt(t, c.Kube, s.ns)

	s.node.MustExec(t, harness.Node0RebootCommand("now")...)
	// Longer than the hold's own hard bound (12m50s, under reboot.target's
	// job timeout): the test never gives up before the product would.
	code, ended := s.node.Wait(t, 14*time.Minute)
	if code != 133 {
		t.Fatalf("node 0 did not reboot: systemd-nspawn exited %d\n%s\n%s", code, s.node.JournalText(t, "-n", "80"), c.Describe(t, s.ns))
	}
	var receivedAt time.Time
	select {
	case receivedAt = <-receipt:
	default:
		t.Fatalf("no receipt on cluster 0 while node 0 rebooted\n%s\n%s", s.node.JournalText(t, "-u", atreboot.HoldUnit), c.Describe(t, s.ns))
	}
	if !receivedAt.Before(ended) {
		t.Fatalf("node 0 finished rebooting at %s, before cluster 0 held the receipt (%s)", ended, receivedAt)
	}
	j := s.node.Journal(t)
	digest := ""
	for _, e := range j {
		if m, ok := strings.CutPrefix(e.Message, "migrated: cluster 0 holds the receipt of "); ok && e.Unit == atreboot.HoldUnit {
			digest = m[strings.LastIndex(m, "@")+1:]
		}
	}
	if digest == "" || index(j, atreboot.HoldUnit, "[3/6] restore: applied Job") < 0 {
		t.Fatalf("the hold did not migrate through the restore Job:\n%s", s.node.JournalText(t, "-u", atreboot.HoldUnit))
	}
	// The Job had ended (PostgreSQL shut down) before node 0 went on.
	cs := c.Clientset(t)
	jb, err := cs.BatchV1().Jobs(s.ns).Get(context.Background(), job.JobName(digest), metav1.GetOptions{})
	if err != nil || jb.Status.CompletionTime == nil || !jb.Status.CompletionTime.Time.Before(ended) {
		t.Fatalf("the restore Job: %v, completed %v, node 0 ended %s", err, jb.Status.CompletionTime, ended)
	}
	hold := s.node.JournalText(t, "-u", atreboot.HoldUnit)
	t.Logf("held reboot, job mode:\n%s", hold)

	seen, pgLog := js.runOperatorPod(t, "")
	compareMigrated(t, want.rows, want.tree, seen.Tables, seen.Files)
	if !strings.Contains(pgLog, "database system was shut down at") {
		t.Errorf("the operator's postgres did not start from a clean shutdown:\n%s", pgLog)
	}
}
