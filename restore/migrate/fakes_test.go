package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/selfimage"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
)

// fakeDB answers for node 0's and cluster 0's databases.
type fakeDB struct {
	sessions   int
	who        string
	err        error
	watermark  Watermark
	clusterIDs []string
	calls      []string
	version    int // server_version_num; 0: 15.20
}

func (f *fakeDB) OtherSessions(_ context.Context, dsn string) (int, string, error) {
	f.calls = append(f.calls, "sessions "+dsn)
	return f.sessions, f.who, f.err
}

func (f *fakeDB) Watermark(_ context.Context, dsn string) (*Watermark, error) {
	f.calls = append(f.calls, "watermark "+dsn)
	w := f.watermark
	return &w, f.err
}

func (f *fakeDB) ServerVersion(_ context.Context, dsn string) (string, int, error) {
	f.calls = append(f.calls, "version "+dsn)
	if f.version == 0 {
		return "15.20", 150020, f.err
	}
	return fmt.Sprintf("%d.1", f.version/10000), f.version, f.err
}

func (f *fakeDB) ClusterIDs(_ context.Context, dsn string) ([]string, error) {
	f.calls = append(f.calls, "clusters "+dsn)
	return f.clusterIDs, f.err
}

// fakeCluster is cluster 0 in memory.
type fakeCluster struct {
	unreachable error
	asc         map[string]string // annotations; nil: none
	replicas    *int32
	hasService  bool
	scaled      bool
	pvcs        map[string]resource.Quantity
	applied     []runtime.Object
	digests     []string
	pgSecret    bool
	key         *auth.KeyPair
	receipt     *journal.Receipt
	waitErr     error
	statuses    []string
	switched    *switchover.Options
	switchRes   *switchover.Result
	switchErr   error
	operator    *job.Operator // nil: none
	operatorErr error
	jobFailed   string // non-empty: the Job failed with this reason
	jobFound    bool
	// jobRunningPolls is how many JobState calls see the Job still running.
	jobRunningPolls int
	jobStatePolls   int
	deletedJobs     []string
}

func (f *fakeCluster) Reachable(context.Context) error { return f.unreachable }
func (f *fakeCluster) AgentServiceConfig(context.Context) (map[string]string, bool, error) {
	return f.asc, f.asc != nil, nil
}
func (f *fakeCluster) ServiceReplicas(context.Context, string) (*int32, bool, error) {
	return f.replicas, f.hasService, nil
}
func (f *fakeCluster) ScaleServiceToZero(context.Context, string) error {
	f.scaled = true
	return nil
}
func (f *fakeCluster) PVCSize(_ context.Context, _, name string) (resource.Quantity, bool, error) {
	q, ok := f.pvcs[name]
	return q, ok, nil
}
func (f *fakeCluster) Apply(_ context.Context, objs []runtime.Object, digest string) error {
	f.applied = append(f.applied, objs...)
	f.digests = append(f.digests, digest)
	return nil
}
func (f *fakeCluster) EnsurePostgresSecret(context.Context, string) error {
	f.pgSecret = true
	return nil
}
func (f *fakeCluster) LocalAuthKey(context.Context, string) (*auth.KeyPair, error) {
	if f.key == nil {
		k, err := auth.GenerateKeyPair()
		if err != nil {
			return nil, err
		}
		f.key = k
	}
	return f.key, nil
}
func (f *fakeCluster) WaitReceipt(ctx context.Context, _, digest string, onStatus func(string)) (*journal.Receipt, error) {
	for _, s := range f.statuses {
		onStatus(s)
	}
	if f.waitErr != nil {
		return nil, f.waitErr
	}
	if f.receipt == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r := *f.receipt
	r.BundleDigest = digest
	return &r, nil
}
func (f *fakeCluster) Operator(context.Context, string) (*job.Operator, error) {
	if f.operatorErr != nil {
		return &job.Operator{}, f.operatorErr
	}
	if f.operator == nil {
		return &job.Operator{}, &OperatorError{NotFound: true, Err: errors.New("no infrastructure operator")}
	}
	return f.operator, nil
}
func (f *fakeCluster) JobState(_ context.Context, _, _ string) (JobState, error) {
	if f.jobFailed != "" {
		return JobState{Found: true, Failed: true, Reason: f.jobFailed}, nil
	}
	f.jobStatePolls++
	if f.jobRunningPolls > 0 {
		f.jobRunningPolls--
		return JobState{Found: true}, nil
	}
	return JobState{Found: f.jobFound, Complete: f.jobFound}, nil
}
func (f *fakeCluster) DeleteJob(_ context.Context, ns, name string) error {
	f.deletedJobs = append(f.deletedJobs, ns+"/"+name)
	f.jobFailed = ""
	return nil
}
func (f *fakeCluster) Switchover(_ context.Context, o switchover.Options) (*switchover.Result, error) {
	f.switched = &o
	if f.switchErr != nil {
		return nil, f.switchErr
	}
	if f.switchRes != nil {
		return f.switchRes, nil
	}
	return &switchover.Result{ServiceURL: o.ServiceURL, Changes: []switchover.Change{{Object: "cm", Key: "url"}}}, nil
}

// fakeBundles is the registry: Create dumps the database source and
// records what it was given.
type fakeBundles struct {
	created     []bundle.CreateOptions
	refs        []string
	exists      map[string]bool
	checked     []string
	createErr   error
	n           int
	metaIDs     []string
	imagePushes []string
}

func (f *fakeBundles) Check(_ context.Context, ref string, _ sign.Key) error {
	f.checked = append(f.checked, ref)
	if f.exists[ref] {
		return nil
	}
	return errors.New("not found")
}

func (f *fakeBundles) PushRestoreImage(_ context.Context, pinned, version string) (*selfimage.Image, error) {
	f.imagePushes = append(f.imagePushes, pinned)
	repo, _, _ := strings.Cut(pinned, "@")
	return &selfimage.Image{Ref: repo + "@sha256:" + strings.Repeat("e", 64), Digest: "sha256:" + strings.Repeat("e", 64),
		Platform: "linux/amd64", Version: version, Size: 1 << 20, Pushed: true}, nil
}

func (f *fakeBundles) Create(ctx context.Context, ref string, o bundle.CreateOptions) (*bundle.Result, error) {
	f.created = append(f.created, o)
	f.refs = append(f.refs, ref)
	if f.createErr != nil {
		return nil, f.createErr
	}
	if o.Database != nil {
		if _, err := o.Database.Dump(ctx, io.Discard); err != nil {
			return nil, err
		}
	}
	f.n++
	dgst := "sha256:" + strings.Repeat(string(rune('0'+f.n)), 64)
	return &bundle.Result{Reference: ref, Digest: dgst, Signer: "sha256:signer",
		Layers:   []bundle.LayerResult{{Kind: bundle.LayerDatabase, Size: 2048}},
		Metadata: &bundle.Metadata{Source: bundle.Source{ClusterIDs: f.metaIDs}}}, nil
}

// fakeSource is the database layer's source.
type fakeSource struct{ clusterIDs []string }

func (f fakeSource) Dump(_ context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	_, err := io.WriteString(w, "dump")
	return &bundle.DatabaseSummary{ClusterIDs: f.clusterIDs}, err
}

// fakeRestorer records the restore's options and sends two events.
type fakeRestorer struct {
	got *restore.Options
	err error
}

func (f *fakeRestorer) Restore(_ context.Context, o restore.Options) (*restore.Result, error) {
	f.got = &o
	if o.OnEvent != nil {
		o.OnEvent(restore.Event{Type: restore.EventStart, Phase: restore.PhaseDatabase})
		o.OnEvent(restore.Event{Type: restore.EventDone, Phase: restore.PhaseDatabase})
	}
	if f.err != nil {
		return nil, f.err
	}
	return &restore.Result{Phases: []journal.Outcome{{Phase: "database", Ran: true}, {Phase: "files", Ran: true}, {Phase: "auth"}}}, nil
}

// world is a migration's options against fakes, with recorded events.
type world struct {
	o        Options
	db       *fakeDB
	cluster  *fakeCluster
	bundles  *fakeBundles
	restorer *fakeRestorer
	events   []Event
}

const (
	sourceDSN = "postgres://admin:node0-secret@127.0.0.1/installer"
	targetDSN = "postgres://admin:c0-secret@10.0.0.5/installer"
)

func newWorld(t *testing.T, direct bool) *world {
	t.Helper()
	ref, err := oci.ParseReference("reg.example.com:5000/assisted/node0:v1")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{db: &fakeDB{}, cluster: &fakeCluster{receipt: &journal.Receipt{Phases: []string{"database", "files", "auth", "resources"}}},
		bundles: &fakeBundles{}, restorer: &fakeRestorer{}}
	w.o = Options{
		Ref: ref, Create: bundle.CreateOptions{Database: fakeSource{clusterIDs: []string{"c-1"}}, Files: &bundle.FilesOptions{Dir: "/data"}},
		SpoolDir: "/spool", SourceDB: sourceDSN, Target: "https://c0:6443", Namespace: "mce",
		ServiceURL: "https://assisted.c0.example.com", StateDir: t.TempDir(), Timeout: time.Second,
		NamespaceMapping: map[string]string{"cluster0": "c0"},
		DB:               w.db, Cluster: w.cluster, Bundles: w.bundles, Restorer: w.restorer,
		AgentServiceConfig: testASC(t),
	}
	if direct {
		w.o.TargetDB, w.o.TargetDataDir = targetDSN, "/mnt/data"
	} else {
		w.cluster.operator = &job.Operator{Namespace: "mce", Deployment: "infrastructure-operator", DatabaseImage: "quay.io/sclorg/postgresql-12-c8s:latest",
			NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""}, Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}}
	}
	w.o.OnEvent = func(e Event) { w.events = append(w.events, e) }
	return w
}

func testASC(t *testing.T) *AgentServiceConfig {
	t.Helper()
	a, err := ParseAgentServiceConfig([]byte(goodASC), "asc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const goodASC = `apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata: {name: agent}
spec:
  databaseStorage: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  filesystemStorage: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Gi}}}
`

// migration builds the state a step runs in.
func (w *world) migration(t *testing.T) *migration {
	t.Helper()
	m, err := newMigration(w.o)
	if err != nil {
		t.Fatal(err)
	}
	if m.state, err = LoadState(w.o.StateDir, w.o.Ref.String(), w.o.Target, w.o.Namespace); err != nil {
		t.Fatal(err)
	}
	return m
}

func (w *world) notes() string {
	var b strings.Builder
	for _, e := range w.events {
		if e.Type == EventNote {
			b.WriteString(e.Detail + "\n")
		}
	}
	return b.String()
}
