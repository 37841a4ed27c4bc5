package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/checks"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// migrateSites is node 0 and cluster 0 on one machine: node 0 has a
// PostgreSQL database with a compact cluster mid-install, a data dir and the
// ABI manifests; cluster 0 has kube-apiserver with the CRDs, its own
// PostgreSQL server (another site), an empty data dir, and the
// assisted-installer-controller that must follow the service.
type migrateSites struct {
	t                   *testing.T
	scenario            assisted.Scenario
	clusterID           string
	node0DB, targetDB   *harness.Database
	dataDir, targetData string
	manifests           string
	registry            *harness.Registry
	kube                *harness.Kube
	kubeconfig          string
	ns, crNS, ctrlNS    string
	asc, stateDir       string
	kubeadminPassword   string
	serviceURL          string
	plugin              *harness.Plugin
}

func newMigrateSites(t *testing.T) *migrateSites {
	t.Helper()
	return newMigrateSitesOn(t, harness.SharedKube(t), true)
}

// newMigrateSitesOn makes node 0 and cluster 0 with k as cluster 0's API;
// direct: cluster 0 also has a database and a data dir node 0 reaches.
func newMigrateSitesOn(t *testing.T, k *harness.Kube, direct bool) *migrateSites {
	t.Helper()
	s := &migrateSites{t: t, scenario: assisted.Scenarios()[0], serviceURL: "https://assisted-service-mce.apps.compact.example.com",
		kubeadminPassword: "KubeadminPw-" + fmt.Sprint(time.Now().UnixNano())}
	if s.scenario.Name != "compact" {
		t.Fatalf("want the compact scenario first, got %s", s.scenario.Name)
	}
	ctx := context.Background()

	// Node 0: the machine's PostgreSQL.
	s.node0DB = harness.NewDatabase(t)
	harness.LoadSQLFile(t, s.node0DB.URL, harness.AssistedSchemaPath())
	conn := s.node0DB.Connect(t)
	if err := assisted.InsertScenario(ctx, conn, s.scenario); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT id::text FROM clusters`).Scan(&s.clusterID); err != nil {
		t.Fatalf("scenario cluster: %v", err)
	}
	conn.Close(ctx) // node 0's service has stopped: no session may stay open
	s.dataDir = node0DataDir(t, s.clusterID, s.kubeadminPassword)
	s.manifests = t.TempDir()
	for i, o := range s.scenario.Objects {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%02d-%s.yaml", i, strings.ToLower(o.GetKind()))
		if err := os.WriteFile(filepath.Join(s.manifests, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.registry = harness.StartInProcessRegistry(t)

	// Cluster 0: a private PostgreSQL server, kube-apiserver.
	if direct {
		pg := harness.StartPostgres(t)
		s.targetDB = pg.NewDatabase(t)
		s.targetData = filepath.Join(t.TempDir(), "assisted-data")
		if err := os.Mkdir(s.targetData, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.kube = k
	s.ns, s.crNS, s.ctrlNS = s.kube.Namespace(t), s.kube.Namespace(t), s.kube.Namespace(t)
	s.kubeconfig = s.kube.KubeconfigFor(t, harness.AdminUser, s.ns)
	seedController(t, s.kube, s.ctrlNS)
	s.asc = filepath.Join(t.TempDir(), "asc.yaml")
	if err := os.WriteFile(s.asc, []byte(`apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata:
  name: agent
spec:
  databaseStorage:
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 10Gi}}
  filesystemStorage:
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 100Gi}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The AgentServiceConfig is cluster-scoped and named "agent": tests that
	// create one must not overlap.
	deleteASC(t, s.kube)
	t.Cleanup(func() { deleteASC(t, s.kube) })
	s.stateDir = t.TempDir()
	s.plugin = harness.NewPlugin(t)
	return s
}

func deleteASC(t *testing.T, k *harness.Kube) {
	gvr := schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}
	_ = k.Dynamic(t).Resource(gvr).Delete(context.Background(), "agent", metav1.DeleteOptions{})
}

// node0DataDir is assisted-service's /data for one cluster: credentials, logs,
// a user manifest with its origin xattr, and a cache that is left out.
func node0DataDir(t *testing.T, clusterID, kubeadmin string) string {
	t.Helper()
	d := assistedData(t, kubeadmin)
	// assistedData names its cluster directory bundleClusterID; make it this
	// cluster's.
	if err := os.Rename(filepath.Join(d, bundleClusterID), filepath.Join(d, clusterID)); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(d, clusterID, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(logs, fmt.Sprintf("master-%d.tar.gz", i)), []byte(strings.Repeat(fmt.Sprintf("log line %d\n", i), 5000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// seedController is the assisted-installer-controller as cluster 0 runs it
// while it finishes installing: its ConfigMap, Secret and pod.
func seedController(t *testing.T, k *harness.Kube, ns string) {
	t.Helper()
	cs := k.Clientset(t)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-config"},
		Data: map[string]string{"inventory-url": "http://192.168.111.80:8090", "cluster-id": "x"}}, metav1.CreateOptions{}))
	must(cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-secret"},
		Data: map[string][]byte{"pull-secret-token": []byte("node0-token")}}, metav1.CreateOptions{}))
	must(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}))
	must(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-x1",
		Labels: map[string]string{"app": "assisted-installer-controller"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/controller:1"}}}}, metav1.CreateOptions{}))
}

func (s *migrateSites) ref() string { return s.registry.Ref("assisted/node0", "v1") }

func (s *migrateSites) args(extra ...string) []string {
	return append([]string{"migrate", "--to", s.ref(), "--plain-http",
		"--db", s.node0DB.URL, "--data-dir", s.dataDir, "--manifests-dir", s.manifests,
		"--target-kubeconfig", s.kubeconfig, "-n", s.ns,
		"--target-db", s.targetDB.URL, "--target-data-dir", s.targetData,
		"--namespace-mapping", "cluster0=" + s.crNS,
		"--agent-service-config", s.asc,
		"--service-url", s.serviceURL, "--controller-namespace", s.ctrlNS,
		"--state-dir", s.stateDir, "--no-progress"}, extra...)
}

type migrateResult struct {
	Kind        string `json:"kind"`
	Digest      string `json:"digest"`
	RestoreMode string `json:"restoreMode"`
	ServiceURL  string `json:"serviceURL"`
	Signer      string `json:"signer"`
	SignerFile  string `json:"signerFile"`
	Steps       []struct {
		Name, State string
		Ran         bool
	} `json:"steps"`
}

func parseMigrate(t *testing.T, out string) migrateResult {
	t.Helper()
	var r migrateResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Kind != "MigrateResult" || !strings.HasPrefix(r.Digest, "sha256:") {
		t.Fatalf("migrate -o json: %v\n%s", err, out)
	}
	return r
}

// tableDigests is, per table of the assisted schema, a digest of its rows as
// JSON, without the kube-key columns the restore writes on purpose.
func tableDigests(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out, err := checks.TableDigests(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeOf describes a directory: path -> mode, size, content digest, origin xattr.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out, err := checks.Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMigrated asserts cluster 0's end state after a complete migration.
func (s *migrateSites) checkMigrated(t *testing.T, digest string) {
	t.Helper()
	s.checkRowsAndFiles(t, tableDigests(t, s.targetDB.URL), treeOf(t, s.targetData))
	// No staging directory or half-written file is left beside the data dir.
	if entries, err := os.ReadDir(filepath.Dir(s.targetData)); err != nil || len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("beside the data dir: %v (%v), want only %s", names, err, filepath.Base(s.targetData))
	}
	s.checkCluster0(t, digest, nil)
}

// checkRowsAndFiles compares what cluster 0 holds (got: table digests and
// the data dir's tree) with node 0's.
func (s *migrateSites) checkRowsAndFiles(t *testing.T, got, dst map[string]string) {
	t.Helper()
	compareMigrated(t, tableDigests(t, s.node0DB.URL), treeOf(t, s.dataDir), got, dst)
}

// compareMigrated compares cluster 0's table digests and file tree (got,
// dst) with node 0's (want, src): every table but the release image cache,
// every file but the installer cache, and no file node 0 never had.
func compareMigrated(t *testing.T, want, src, got, dst map[string]string) {
	t.Helper()
	for tb, w := range want {
		if tb == "release_images" {
			continue // a cache: definition only, by default
		}
		if got[tb] != w {
			t.Errorf("table %s differs on cluster 0: node 0 %s, cluster 0 %s", tb, w, got[tb])
		}
	}
	for p, w := range src {
		if strings.HasPrefix(p, "installercache") {
			if _, ok := dst[p]; ok {
				t.Errorf("%s is a cache and must not be restored", p)
			}
			continue
		}
		if dst[p] != w {
			t.Errorf("file %s: node 0 %q, cluster 0 %q", p, w, dst[p])
		}
	}
	for p := range dst {
		if _, ok := src[p]; !ok {
			t.Errorf("file %s on cluster 0 was never on node 0", p)
		}
	}
}

// checkCluster0 checks cluster 0's API after a complete migration: the
// objects, the kube keys of the cluster rows (keys, else read from the
// target database), the receipt, the AgentServiceConfig, the controller.
func (s *migrateSites) checkCluster0(t *testing.T, digest string, keys map[string]string) {
	t.Helper()
	ctx := context.Background()
	dyn := s.kube.Dynamic(t)
	checkMigratedObjects(t, s.kube, s.crNS, len(s.scenario.Hosts))
	if keys == nil {
		conn := s.targetDB.Connect(t)
		var err error
		if keys, err = checks.ClusterKeys(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := keys[s.clusterID], s.crNS+"/compact"; got != want {
		t.Errorf("kube key of the cluster row: %q, want %s", got, want)
	}

	// The receipt names exactly the pushed digest.
	if r := s.plugin.Run(t, "wait-for", "restore-complete", "--kubeconfig", s.kubeconfig, "-n", s.ns, "--bundle", digest, "--timeout", "10s"); r.ExitCode != 0 {
		t.Fatalf("wait-for the pushed digest:\n%s", r.Combined())
	}
	wrong := "sha256:" + strings.Repeat("0", 64)
	if r := s.plugin.Run(t, "wait-for", "restore-complete", "--kubeconfig", s.kubeconfig, "-n", s.ns, "--bundle", wrong, "--timeout", "3s"); r.ExitCode == 0 {
		t.Fatalf("wait-for exited 0 for a digest never restored")
	}

	// The AgentServiceConfig exists only now, marked with the bundle.
	asc, err := dyn.Resource(schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}).
		Get(ctx, "agent", metav1.GetOptions{})
	if err != nil || asc.GetAnnotations()["kubectl-assisted.io/bundle-digest"] != digest {
		t.Fatalf("AgentServiceConfig after the receipt: %v %v", err, asc)
	}

	// The controller follows the service, with a token cluster 0's key signed.
	checkControllerFollows(t, s.kube, s.ns, s.ctrlNS, s.serviceURL, s.clusterID)
	cs := s.kube.Clientset(t)
	if _, err := cs.CoreV1().Pods(s.ctrlNS).Get(ctx, "assisted-installer-controller-x1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("controller pod not restarted: %v", err)
	}
}

// checkMigratedObjects asserts cluster 0's objects after a migration: the
// ClusterDeployment kept on delete, one Agent per host of the scenario.
func checkMigratedObjects(t *testing.T, k *harness.Kube, crNS string, hosts int) {
	t.Helper()
	ctx := context.Background()
	dyn := k.Dynamic(t)
	cd, err := dyn.Resource(schema.GroupVersionResource{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"}).
		Namespace(crNS).Get(ctx, "compact", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterDeployment on cluster 0: %v", err)
	}
	if keep, _, _ := unstructuredBool(cd.Object, "spec", "preserveOnDelete"); !keep {
		t.Errorf("cluster 0's ClusterDeployment lacks preserveOnDelete")
	}
	agents, err := dyn.Resource(schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"}).
		Namespace(crNS).List(ctx, metav1.ListOptions{})
	if err != nil || len(agents.Items) != hosts {
		t.Fatalf("agents on cluster 0: %v, %d (want %d)", err, len(agents.Items), hosts)
	}
}

// checkControllerFollows asserts the switchover: the installer controller's
// inventory URL is cluster 0's service, and its token verifies with cluster
// 0's local-auth key (in ns) for clusterID.
func checkControllerFollows(t *testing.T, k *harness.Kube, ns, ctrlNS, serviceURL, clusterID string) {
	t.Helper()
	ctx := context.Background()
	cs := k.Clientset(t)
	cm, _ := cs.CoreV1().ConfigMaps(ctrlNS).Get(ctx, "assisted-installer-controller-config", metav1.GetOptions{})
	if cm.Data["inventory-url"] != serviceURL {
		t.Errorf("controller inventory-url = %q", cm.Data["inventory-url"])
	}
	sec, _ := cs.CoreV1().Secrets(ctrlNS).Get(ctx, "assisted-installer-controller-secret", metav1.GetOptions{})
	local, err := cs.CoreV1().Secrets(ns).Get(ctx, "assisted-servicelocal-auth", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("local auth Secret: %v", err)
	}
	claims, err := auth.VerifyToken(local.Data["ec-public-key.pem"], string(sec.Data["pull-secret-token"]), time.Now())
	if err != nil || claims["cluster_id"] != clusterID {
		t.Errorf("controller token: claims %v, %v; want cluster_id %s", claims, err, clusterID)
	}
}

func unstructuredBool(obj map[string]any, fields ...string) (bool, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return false, false, nil
		}
		cur = m[f]
	}
	b, ok := cur.(bool)
	return b, ok, nil
}

// TestMigrate_TwoSites runs one migrate from node 0 to cluster 0 and checks
// everything moved: database, files, CRs, receipt, AgentServiceConfig,
// controller; then a rerun changes nothing, and no secret reached the output.
func TestMigrate_TwoSites(t *testing.T) {
	s := newMigrateSites(t)
	// --dry-run: the checks and the plan, and nothing anywhere changes.
	dry := s.plugin.Run(t, s.args("--dry-run", "-o", "json")...)
	var plan struct {
		Kind, RestoreMode string
		Steps             []string
	}
	if err := json.Unmarshal([]byte(dry.Stdout), &plan); dry.ExitCode != 0 || err != nil || plan.Kind != "MigratePlan" || plan.RestoreMode != "direct" || len(plan.Steps) != 6 {
		t.Fatalf("migrate --dry-run: %v\n%s", err, dry.Combined())
	}
	if entries, _ := os.ReadDir(s.stateDir); len(entries) != 0 {
		t.Errorf("--dry-run wrote state: %v", entries)
	}
	if got := tableDigests(t, s.targetDB.URL); len(got) != 0 {
		t.Errorf("--dry-run changed the target database: %v", got)
	}
	r := s.plugin.Run(t, s.args("-o", "json")...)
	if r.ExitCode != 0 {
		t.Fatalf("migrate exited %d:\n%s", r.ExitCode, r.Combined())
	}
	res := parseMigrate(t, r.Stdout)
	if res.RestoreMode != "direct" || res.ServiceURL != s.serviceURL || len(res.Steps) != 6 {
		t.Fatalf("result: %+v", res)
	}
	for _, st := range res.Steps {
		if st.State != "done" || !st.Ran {
			t.Errorf("step %s: %s ran=%v", st.Name, st.State, st.Ran)
		}
	}
	s.checkMigrated(t, res.Digest)
	s.checkSigned(t, res)
	// The restore gathered statistics (ANALYZE, beside the later phases)
	// before it wrote the receipt.
	var analyzed int
	if err := s.targetDB.Connect(t).QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_statistic
		WHERE starelid IN ('public.events'::regclass, 'public.hosts'::regclass)`).Scan(&analyzed); err != nil || analyzed == 0 {
		t.Errorf("no statistics on cluster 0's events and hosts after the restore (%v)", err)
	}
	for _, secret := range []string{s.kubeadminPassword, assisted.ScenarioPullSecret, "c2NlbmFyaW8tdXNlcjpzY2VuYXJpby1wYXNzd29yZA", "AGE-SECRET-KEY", "PRIVATE KEY", signingKeyBody(t, s.stateDir)} {
		if strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Errorf("secret %.12s... in migrate's output", secret)
		}
	}

	again := s.plugin.Run(t, s.args("-o", "json")...)
	if again.ExitCode != 0 {
		t.Fatalf("rerun exited %d:\n%s", again.ExitCode, again.Combined())
	}
	res2 := parseMigrate(t, again.Stdout)
	if res2.Digest != res.Digest {
		t.Errorf("rerun made a new bundle: %s then %s", res.Digest, res2.Digest)
	}
	for _, st := range res2.Steps[1:] {
		if st.Ran {
			t.Errorf("rerun ran step %s again", st.Name)
		}
	}
	s.checkMigrated(t, res.Digest)
}

// TestMigrate_RefusesWhatWouldLoseData: assisted-service still connected to
// node 0's database, an AgentServiceConfig already on cluster 0: each stops
// in preflight (exit 11) before anything changed.
func TestMigrate_RefusesWhatWouldLoseData(t *testing.T) {
	s := newMigrateSites(t)
	ctx := context.Background()
	busy := s.node0DB.Connect(t) // assisted-service, still running
	if _, err := busy.Exec(ctx, "SET application_name = 'assisted-service'"); err != nil {
		t.Fatal(err)
	}
	r := s.plugin.Run(t, s.args()...)
	if r.ExitCode != 11 || !strings.Contains(r.Stderr, "assisted-service") || !strings.Contains(r.Stderr, "--live") {
		t.Fatalf("a running service must stop preflight with exit 11 and say how to proceed:\n%s", r.Combined())
	}

	gvr := schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}
	asc := map[string]any{"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "AgentServiceConfig", "metadata": map[string]any{"name": "agent"},
		"spec": map[string]any{
			"databaseStorage":   map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
			"filesystemStorage": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}}
	if _, err := s.kube.Dynamic(t).Resource(gvr).Create(ctx, toUnstructured(asc), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = s.plugin.Run(t, s.args("--live")...)
	if r.ExitCode != 11 || !strings.Contains(r.Stderr, "AgentServiceConfig") {
		t.Fatalf("an existing AgentServiceConfig must stop preflight with exit 11:\n%s", r.Combined())
	}
	// Nothing moved: no bundle in the registry, the target is empty.
	if got := tableDigests(t, s.targetDB.URL); len(got) != 0 {
		t.Errorf("the target database changed: %v", got)
	}
	if entries, _ := os.ReadDir(s.targetData); len(entries) != 0 {
		t.Errorf("the target data dir changed: %v", entries)
	}

	// --live: the service still connected, the dump from one snapshot, the
	// WAL position recorded.
	deleteASC(t, s.kube)
	r = s.plugin.Run(t, s.args("--live", "-o", "json")...)
	if r.ExitCode != 0 {
		t.Fatalf("--live exited %d:\n%s", r.ExitCode, r.Combined())
	}
	var live struct {
		Digest    string `json:"digest"`
		Watermark *struct {
			WALLSN   string `json:"walLSN"`
			Sessions int    `json:"sessions"`
		} `json:"watermark"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &live); err != nil || live.Watermark == nil || !strings.Contains(live.Watermark.WALLSN, "/") || live.Watermark.Sessions < 1 {
		t.Fatalf("--live result must carry the watermark: %v\n%s", err, r.Stdout)
	}
	busy.Close(ctx)
	s.checkMigrated(t, live.Digest)
}

// TestMigrate_KilledAtEachStepThenRerun kills migrate (SIGKILL, with the
// restore child it runs) as each step starts, reruns it, and ends in the state
// of one clean run.
func TestMigrate_KilledAtEachStepThenRerun(t *testing.T) {
	s := newMigrateSites(t)
	bin := filepath.Join(s.plugin.BinDir, "kubectl-assisted")
	// Each marker is where a step (or a restore phase, printed by the restore
	// child) starts; every run resumes from the previous kill and must reach
	// the next marker.
	killAt := []string{"[2/6] bundle ...", "[3/6] restore ...", "database: started", "files: started", "resources: started",
		"[4/6] wait ...", "[5/6] service ...", "[6/6] switchover ..."}
	spool := t.TempDir()
	for _, marker := range killAt {
		if !runUntil(t, bin, s.plugin, s.args("--spool-dir", spool), marker) {
			t.Fatalf("the run ended before %q: nothing was killed there", marker)
		}
	}
	r := s.plugin.Run(t, s.args("-o", "json")...)
	if r.ExitCode != 0 {
		t.Fatalf("final rerun exited %d:\n%s", r.ExitCode, r.Combined())
	}
	res := parseMigrate(t, r.Stdout)
	s.checkMigrated(t, res.Digest)
}

// runUntil runs the binary and SIGKILLs it as soon as its stderr shows marker;
// it reports whether it killed it (false: the run ended first).
func runUntil(t *testing.T, bin string, p *harness.Plugin, args []string, marker string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = p.Command(ctx).Env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), marker) {
			_ = cmd.Process.Kill()
			killed = true
			break
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
	_ = cmd.Wait()
	if !killed {
		t.Logf("marker %q never appeared; output:\n%s", marker, strings.Join(seen, "\n"))
	}
	return killed
}

func toUnstructured(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}

// checkSigned: migrate signed the bundle with the key pair it generated in
// its state directory; the bundle verifies with that public key only, and is
// refused (exit 9) without it.
func (s *migrateSites) checkSigned(t *testing.T, res migrateResult) {
	t.Helper()
	if res.SignerFile == "" || !strings.HasPrefix(res.SignerFile, s.stateDir) {
		t.Fatalf("signerFile %q is not in the state directory %s", res.SignerFile, s.stateDir)
	}
	pemData, err := os.ReadFile(res.SignerFile)
	if err != nil {
		t.Fatal(err)
	}
	// The fingerprint is SHA-256 of the public key's DER (docs/bundle-format.md).
	block, _ := pem.Decode(pemData)
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("%s is not a PEM public key", res.SignerFile)
	}
	sum := sha256.Sum256(block.Bytes)
	if want := "sha256:" + hex.EncodeToString(sum[:]); res.Signer != want {
		t.Errorf("signer %q, want the public key's fingerprint %s", res.Signer, want)
	}
	key := filepath.Join(filepath.Dir(res.SignerFile), "signing.key")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("signing key %s: %v, mode %v (want 0600)", key, err, fi)
	}
	pinned := s.registry.Host + "/assisted/node0@" + res.Digest
	v := s.plugin.Run(t, "bundle", "verify", pinned, "--plain-http", "--signer", res.SignerFile, "-o", "json")
	if v.ExitCode != 0 || !strings.Contains(v.Stdout, `"verified": true`) || !strings.Contains(v.Stdout, res.Signer) {
		t.Fatalf("verify with migrate's public key: exit %d\n%s", v.ExitCode, v.Combined())
	}
	if u := s.plugin.Run(t, "bundle", "verify", pinned, "--plain-http"); u.ExitCode != 9 {
		t.Fatalf("verify without --signer: exit %d, want 9\n%s", u.ExitCode, u.Combined())
	}
}

// signingKeyBody is the base64 body of the signing key migrate generated
// (a secret: no output may show it); "" when there is none yet.
func signingKeyBody(t *testing.T, stateDir string) string {
	t.Helper()
	keys, _ := filepath.Glob(filepath.Join(stateDir, "*", "signing.key"))
	for _, k := range keys {
		if b, err := os.ReadFile(k); err == nil {
			if block, _ := pem.Decode(b); block != nil {
				return base64.StdEncoding.EncodeToString(block.Bytes)
			}
		}
	}
	return "no signing key found: " + stateDir
}
