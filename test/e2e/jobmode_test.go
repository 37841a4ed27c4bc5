package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/test/checks"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// jobSites is node 0 (migrateSites' database, data dir and manifests) and
// cluster 0 as the test cluster with a real node: its API, an
// infrastructure operator (a Deployment shaped like the operator's, with its
// DATABASE_IMAGE), local volumes in a storage class of the test's own, and
// a registry with TLS and basic auth that the node trusts, on the node's
// address so that the Job's pod reaches it too.
type jobSites struct {
	*migrateSites
	c        *harness.Cluster
	class    string
	major    int
	registry *harness.Registry
	taint    corev1.Taint
	ascFile  string
}

func newJobSites(t *testing.T, major int, fsAccess corev1.PersistentVolumeAccessMode) *jobSites {
	t.Helper()
	c := harness.SharedCluster(t)
	s := &jobSites{migrateSites: newMigrateSitesOn(t, c.Kube, false), c: c, major: major}
	s.registry = harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true, IP: harness.NodeIP})
	c.TrustRegistry(t, s.registry)
	s.class = "kat-" + s.ns
	c.LocalVolumes(t, s.class, "2Gi", "2Gi")

	// The operator's placement: a toleration for a taint of this test's
	// own, which keeps every pod without it off the node while it lasts.
	s.taint = corev1.Taint{Key: "kubectl-assisted.io/test-" + s.ns, Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	c.StartOperator(t, s.ns, major, s.tolerations())
	s.setTaint(t, true)
	t.Cleanup(func() { s.setTaint(t, false) })

	s.ascFile = filepath.Join(t.TempDir(), "asc.yaml")
	asc := fmt.Sprintf(`apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata:
  name: agent
spec:
  databaseStorage:
    storageClassName: %[1]s
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 1Gi}}
  filesystemStorage:
    storageClassName: %[1]s
    accessModes: [%[2]s]
    resources: {requests: {storage: 1500Mi}}
`, s.class, fsAccess)
	if err := os.WriteFile(s.ascFile, []byte(asc), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// tolerations tolerate the test's taint.
func (s *jobSites) tolerations() []corev1.Toleration {
	if s.taint.Key == "" {
		return nil
	}
	return []corev1.Toleration{{Key: s.taint.Key, Operator: corev1.TolerationOpEqual, Value: s.taint.Value, Effect: s.taint.Effect}}
}

// setTaint adds or removes the test's taint on the node.
func (s *jobSites) setTaint(t *testing.T, on bool) {
	t.Helper()
	cs := s.kube.Clientset(t)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		n, err := cs.CoreV1().Nodes().Get(ctx, harness.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var taints []corev1.Taint
		for _, tt := range n.Spec.Taints {
			if tt.Key != s.taint.Key {
				taints = append(taints, tt)
			}
		}
		if on {
			taints = append(taints, s.taint)
		}
		n.Spec.Taints = taints
		if _, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	t.Fatalf("could not set the node's taints")
}

func (s *jobSites) args(extra ...string) []string {
	return append([]string{"migrate", "--to", s.registry.Ref("assisted/node0", "v1"),
		"--registry-config", s.registry.AuthFile, "--ca-file", s.registry.CAFile,
		"--db", s.node0DB.URL, "--data-dir", s.dataDir, "--manifests-dir", s.manifests,
		"--target-kubeconfig", s.kubeconfig, "-n", s.ns,
		"--namespace-mapping", "cluster0=" + s.crNS,
		"--agent-service-config", s.ascFile,
		"--service-url", s.serviceURL, "--controller-namespace", s.ctrlNS,
		"--state-dir", s.stateDir, "--no-progress", "--timeout", "5m"}, extra...)
}

// operatorPod is the pod of the Deployment the operator creates for
// assisted-service (newAssistedServiceDeployment, release-4.19
// agentserviceconfig_controller.go): its postgres container as the operator
// writes it (DATABASE_IMAGE, POSTGRESQL_* from the postgres Secret, the
// postgres PVC at /var/lib/pgsql/data, requests 100m/400Mi) and volumes
// (bucket-filesystem: the assisted-service PVC at /data; postgresdb), its
// placement (the operator pod's nodeSelector and tolerations); the
// assisted-service container is replaced by the checker, with the
// service's DB_* variables from the same Secret and the image the restore
// ran as (the restricted-v2 SCC gives every pod of a namespace one UID).
func (s *jobSites) operatorPod(t *testing.T, checkerImage string) *corev1.Pod {
	t.Helper()
	secretEnv := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "postgres"}, Key: key}}}
	}
	pg := harness.OperatorPostgresContainer(s.major)
	pg.ReadinessProbe = nil
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "assisted-service"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{"kubernetes.io/hostname": harness.NodeName},
			Tolerations:   s.tolerations(),
			Containers: []corev1.Container{
				{
					Name: "assisted-service", Image: checkerImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Env: []corev1.EnvVar{secretEnv("DB_HOST", "db.host"), secretEnv("DB_NAME", "db.name"), secretEnv("DB_PASS", "db.password"),
						secretEnv("DB_PORT", "db.port"), secretEnv("DB_USER", "db.user")},
					VolumeMounts: []corev1.VolumeMount{{Name: "bucket-filesystem", MountPath: "/data"}},
				},
				pg,
			},
			Volumes: []corev1.Volume{
				{Name: "bucket-filesystem", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.FilesystemPVC}}},
				{Name: "postgresdb", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.DatabasePVC}}},
			},
		},
	}
}

// runOperatorPod runs the operator's pod on the PVCs the Job left and
// returns what its checker saw and its postgres container's log.
func (s *jobSites) runOperatorPod(t *testing.T, _ string) (checks.Seen, string) {
	t.Helper()
	cs := s.kube.Clientset(t)
	ctx := context.Background()
	pod := s.operatorPod(t, s.checkerImage(t))
	if _, err := cs.CoreV1().Pods(s.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Pods(s.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	var exit *corev1.ContainerStateTerminated
	waitUntil(t, 3*time.Minute, "the checker in the operator's pod", func() (bool, string) {
		p, err := cs.CoreV1().Pods(s.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.Name == "assisted-service" && st.State.Terminated != nil {
				exit = st.State.Terminated
				return true, ""
			}
		}
		return false, s.c.Describe(t, s.ns)
	})
	out := s.c.PodLogs(t, s.ns, pod.Name, "assisted-service")
	pgLog := s.c.PodLogs(t, s.ns, pod.Name, "postgres")
	if exit.ExitCode != 0 {
		t.Fatalf("checker exited %d:\n%s\npostgres:\n%s", exit.ExitCode, out, pgLog)
	}
	var seen checks.Seen
	if err := json.Unmarshal([]byte(out), &seen); err != nil {
		t.Fatalf("checker output: %v\n%s", err, out)
	}
	return seen, pgLog
}

// checkerImage is the checker on the node: an image built here, under the
// restore image's user (1001), served by the node's mirror.
func (s *jobSites) checkerImage(t *testing.T) string {
	t.Helper()
	img, err := harness.CheckerImage()
	if err != nil {
		t.Fatal(err)
	}
	name := "kat.local/checker:" + img.Digest()[7:19]
	s.c.MirrorImage(t, name, img)
	return name
}

// TestJobMode_MigrateOnTheNode runs migrate in job mode against the test
// cluster's real kubelet: the preflight reads the infrastructure operator,
// migrate pushes the bundle and itself as an image beside it, applies the
// PVCs, Secrets, ConfigMap, RBAC and Job; the kubelet pulls the restore image
// by digest with the bundle's credentials and CA, runs PostgreSQL from the
// operator's DATABASE_IMAGE (12, the default of release-4.17 and 4.19) as a
// native sidecar, starts the restore once its startupProbe passes; the Job
// completes, the receipt is written, the AgentServiceConfig created, the
// controller switched over. Then the pod the operator would create runs on
// the same PVCs: its postgres container starts on the restored PGDATA from a
// clean shutdown, and its checker sees every row and file node 0 had.
func TestJobMode_MigrateOnTheNode(t *testing.T) {
	s := newJobSites(t, 12, corev1.ReadWriteMany)
	ctx := context.Background()
	cs := s.kube.Clientset(t)
	r := s.plugin.Run(t, s.args("-o", "json")...)
	if r.ExitCode != 0 {
		t.Fatalf("migrate in job mode exited %d:\n%s\n%s", r.ExitCode, r.Combined(), s.c.Describe(t, s.ns))
	}
	res := parseMigrate(t, r.Stdout)
	if res.RestoreMode != "job" {
		t.Fatalf("restore mode %q", res.RestoreMode)
	}
	t.Logf("migrate:\n%s", r.Stderr)
	for _, want := range []string{"infrastructure operator " + s.ns + "/infrastructure-operator runs PostgreSQL from " + harness.OperatorDatabaseImage(12),
		"restore image", "beside the bundle"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("migrate's output lacks %q:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Combined(), s.registry.Password) {
		t.Error("the registry password leaked into migrate's output")
	}

	j, err := cs.BatchV1().Jobs(s.ns).Get(ctx, job.JobName(res.Digest), metav1.GetOptions{})
	if err != nil || j.Status.Succeeded != 1 {
		t.Fatalf("Job: %v, %+v\n%s", err, j.Status, s.c.Describe(t, s.ns))
	}
	pods, err := cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.Name})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's pods: %v %d", err, len(pods.Items))
	}
	pod := pods.Items[0]
	restoreImage := pod.Spec.Containers[0].Image
	repo := s.registry.Host + "/assisted/node0@sha256:"
	if !strings.HasPrefix(restoreImage, repo) {
		t.Errorf("the Job ran %s, want this binary pushed beside the bundle (%s...)", restoreImage, repo)
	}
	if pod.Spec.InitContainers[0].Image != harness.OperatorDatabaseImage(12) {
		t.Errorf("the sidecar ran %s, want the operator's DATABASE_IMAGE", pod.Spec.InitContainers[0].Image)
	}
	if pod.Spec.NodeName != harness.NodeName {
		t.Errorf("the Job's pod ran on %q", pod.Spec.NodeName)
	}
	// The inspect lists the image beside the bundle.
	insp := s.plugin.Run(t, "bundle", "inspect", s.registry.Ref("assisted/node0", "v1"), "--registry-config", s.registry.AuthFile, "--ca-file", s.registry.CAFile, "-o", "json")
	if insp.ExitCode != 0 || !strings.Contains(insp.Stdout, strings.TrimPrefix(restoreImage, s.registry.Host+"/assisted/node0@")) {
		t.Errorf("bundle inspect does not list the restore image %s:\n%s", restoreImage, insp.Combined())
	}

	// PVCs: bound, with the AgentServiceConfig's class and access modes.
	for name, mode := range map[string]corev1.PersistentVolumeAccessMode{job.DatabasePVC: corev1.ReadWriteOnce, job.FilesystemPVC: corev1.ReadWriteMany} {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != s.class ||
			len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != mode {
			t.Errorf("PVC %s: %s, class %v, modes %v; want bound, %s, %s", name, pvc.Status.Phase, pvc.Spec.StorageClassName, pvc.Spec.AccessModes, s.class, mode)
		}
	}
	s.checkOperatorAdoptsPVCs(t)

	t.Logf("%s: the operator's pod", time.Now().Format(time.StampMilli))
	seen, pgLog := s.runOperatorPod(t, restoreImage)
	t.Logf("%s: checks", time.Now().Format(time.StampMilli))
	s.checkRowsAndFiles(t, seen.Tables, seen.Files)
	// The sidecar's SIGTERM ended in a shutdown checkpoint: the next start
	// finds a cleanly shut down cluster, nothing to recover.
	if !strings.Contains(pgLog, "database system was shut down at") || strings.Contains(pgLog, "not properly shut down") {
		t.Errorf("the operator's postgres did not start from a clean shutdown:\n%s", pgLog)
	}
	s.checkCluster0(t, res.Digest, seen.ClusterKeys)
}

// checkOperatorAdoptsPVCs does to the PVCs what the operator's mutate
// functions do when they adopt them (newDatabasePVC and newFilesystemPVC,
// release-4.19 agentserviceconfig_controller.go: set the owner reference
// and resources.requests to the AgentServiceConfig's, then Update) and
// checks that the API server accepts it and nothing else changed.
func (s *jobSites) checkOperatorAdoptsPVCs(t *testing.T) {
	t.Helper()
	cs := s.kube.Clientset(t)
	ctx := context.Background()
	owner := metav1.OwnerReference{APIVersion: "agent-install.openshift.io/v1beta1", Kind: "AgentServiceConfig", Name: "agent",
		UID: types.UID("00000000-0000-0000-0000-000000000001"), Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
	for name, size := range map[string]string{job.DatabasePVC: "1Gi", job.FilesystemPVC: "1500Mi"} {
		before, err := cs.CoreV1().PersistentVolumeClaims(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc := before.DeepCopy()
		pvc.OwnerReferences = []metav1.OwnerReference{owner}
		pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		after, err := cs.CoreV1().PersistentVolumeClaims(s.ns).Update(ctx, pvc, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("the operator's adoption of PVC %s is refused: %v", name, err)
			continue
		}
		if !equality.Semantic.DeepEqual(after.Spec, before.Spec) {
			t.Errorf("adopting PVC %s changes its spec:\n%+v\n%+v", name, before.Spec, after.Spec)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// waitUntil polls cond until it holds, or fails t after timeout with cond's
// last word.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not after %s:\n%s", what, timeout, last)
}

// TestJobMode_OperatorOnPostgres16 is the same migrate against an operator
// whose DATABASE_IMAGE is PostgreSQL 16 (assisted-service master's
// default, images.go): the Job initialises a 16 data directory, and the
// operator's 16 starts on it.
func TestJobMode_OperatorOnPostgres16(t *testing.T) {
	s := newJobSites(t, 16, corev1.ReadWriteOnce)
	r := s.plugin.Run(t, s.args("-o", "json")...)
	if r.ExitCode != 0 {
		t.Fatalf("migrate in job mode (PostgreSQL 16) exited %d:\n%s\n%s", r.ExitCode, r.Combined(), s.c.Describe(t, s.ns))
	}
	res := parseMigrate(t, r.Stdout)
	seen, pgLog := s.runOperatorPod(t, "")
	s.checkRowsAndFiles(t, seen.Tables, seen.Files)
	if !strings.Contains(pgLog, "starting PostgreSQL 16.") || !strings.Contains(pgLog, "database system was shut down at") {
		t.Errorf("the operator's PostgreSQL 16 on the Job's data directory:\n%s", pgLog)
	}
	s.checkCluster0(t, res.Digest, seen.ClusterKeys)
}

// TestJobMode_NewerBundleRefusedBeforeAnyWrite: node 0's database (PostgreSQL
// 15) has a column of a type PostgreSQL 12 lacks (int4multirange, new in 14),
// and the operator runs 12. The restore in the Job tries the bundle's schema
// on the sidecar (the operator's 12) in a transaction it rolls back, is
// refused (exit 26), the Job fails at once (podFailurePolicy, no retry), and
// migrate stops waiting with the restore's reason. Nothing was written: the
// operator's pod finds an empty database and an empty /data.
func TestJobMode_NewerBundleRefusedBeforeAnyWrite(t *testing.T) {
	s := newJobSites(t, 12, corev1.ReadWriteOnce)
	s.node0DB.Exec(t, `ALTER TABLE clusters ADD COLUMN kat_ranges int4multirange`)
	r := s.plugin.Run(t, s.args()...)
	if r.ExitCode != 14 || !strings.Contains(r.Stderr, "exited 26") || !strings.Contains(r.Stderr, "older than") {
		t.Fatalf("migrate with a bundle PostgreSQL 12 refuses: exit %d, want 14 with the restore's reason (exit 26):\n%s\n%s", r.ExitCode, r.Combined(), s.c.Describe(t, s.ns))
	}
	cs := s.kube.Clientset(t)
	ctx := context.Background()
	jobs, err := cs.BatchV1().Jobs(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("Jobs: %v %d", err, len(jobs.Items))
	}
	pods, err := cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + jobs.Items[0].Name})
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("the Job ran %d pod(s) (%v): a refusal must not be retried", len(pods.Items), err)
	}
	seen, _ := s.runOperatorPod(t, "")
	if len(seen.Tables) != 0 || len(seen.Files) != 0 {
		t.Fatalf("the refused restore wrote: tables %v, files %v", seen.Tables, seen.Files)
	}
}

// TestJobMode_PodKilledInTheLoadThenRerun kills the Job's pod while the
// restore loads the database (its staging tables are there), as a node
// failure would: the Job starts another pod, whose restore starts over and
// completes, and migrate, which kept waiting, finishes. A rerun of migrate
// then changes nothing, and cluster 0 holds exactly node 0's data.
func TestJobMode_PodKilledInTheLoadThenRerun(t *testing.T) {
	s := newJobSites(t, 12, corev1.ReadWriteOnce)
	// Enough rows that the load lasts a few seconds.
	s.node0DB.Exec(t, `CREATE TABLE kat_bulk (id bigint PRIMARY KEY, v text NOT NULL);
		INSERT INTO kat_bulk SELECT g, md5(g::text) || md5((g * 7)::text) FROM generate_series(1, 1500000) g;`)
	cs := s.kube.Clientset(t)
	ctx := context.Background()

	cmd := s.plugin.Command(ctx, s.args("-o", "json")...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// The password the sidecar takes, to look into the load from here.
	var killed string
	waitUntil(t, 4*time.Minute, "the Job's pod in the middle of the database load", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("migrate ended before the load could be interrupted: %v\n%s", err, stderr.String())
		default:
		}
		sec, err := cs.CoreV1().Secrets(s.ns).Get(ctx, "postgres", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-assisted"})
		if err != nil || len(pods.Items) == 0 || pods.Items[0].Status.PodIP == "" {
			return false, fmt.Sprint(err)
		}
		p := pods.Items[0]
		url := fmt.Sprintf("postgres://%s:%s@%s:5432/%s?sslmode=disable&connect_timeout=2", sec.Data["db.user"], sec.Data["db.password"], p.Status.PodIP, sec.Data["db.name"])
		if n, err := countStaging(ctx, url); err != nil || n == 0 {
			return false, fmt.Sprintf("no staging table yet (%v)", err)
		}
		zero := int64(0)
		if err := cs.CoreV1().Pods(s.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return false, err.Error()
		}
		killed = p.Name
		return true, ""
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("migrate after its Job's pod %s was killed: %v\n%s\n%s", killed, err, stderr.String(), s.c.Describe(t, s.ns))
		}
	case <-time.After(6 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("migrate did not finish after the pod was killed:\n%s", s.c.Describe(t, s.ns))
	}
	res := parseMigrate(t, stdout.String())
	pods, err := cs.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.JobName(res.Digest)})
	if err != nil || len(pods.Items) == 0 || pods.Items[0].Name == killed || pods.Items[0].Status.Phase != corev1.PodSucceeded {
		t.Errorf("the Job's pods after %s was killed: %v %v; want another pod that succeeded", killed, err, pods)
	}

	rerun := s.plugin.Run(t, s.args("-o", "json")...)
	if rerun.ExitCode != 0 {
		t.Fatalf("rerun: exit %d\n%s", rerun.ExitCode, rerun.Combined())
	}
	again := parseMigrate(t, rerun.Stdout)
	for _, st := range again.Steps {
		if st.Ran && st.Name != "preflight" {
			t.Errorf("the rerun ran step %s again", st.Name)
		}
	}
	seen, _ := s.runOperatorPod(t, "")
	s.checkRowsAndFiles(t, seen.Tables, seen.Files)
	if seen.Tables["kat_bulk"] == "" || !strings.HasPrefix(seen.Tables["kat_bulk"], "1500000:") {
		t.Errorf("kat_bulk on cluster 0: %q", seen.Tables["kat_bulk"])
	}
	s.checkCluster0(t, res.Digest, seen.ClusterKeys)
}

// countStaging counts the restore's staging tables in the database at url.
func countStaging(ctx context.Context, url string) (int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname LIKE 'kubectl\_assisted\_staging\_%'`).Scan(&n)
	return n, err
}
