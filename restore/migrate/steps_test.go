package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

func TestPreflight_SourceStillWritten(t *testing.T) {
	w := newWorld(t, true)
	w.db.sessions, w.db.who = 2, "assisted-service@local"
	_, err := preflightStep{}.run(context.Background(), w.migration(t))
	if err == nil || !strings.Contains(err.Error(), "assisted-service@local") || !strings.Contains(Hint(err), "--live") {
		t.Fatalf("a busy source must stop the preflight and name --live: %v (hint %q)", err, Hint(err))
	}
	w.o.Live = true
	detail, err := preflightStep{}.run(context.Background(), w.migration(t))
	if err != nil || !strings.Contains(detail, "--live: 2 session(s)") {
		t.Fatalf("--live: %q %v", detail, err)
	}
	if w.db.calls[0] != "sessions "+sourceDSN {
		t.Fatalf("the sessions were counted on %v, want node 0's database", w.db.calls)
	}
}

func TestPreflight_Cluster0(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true)
	w.cluster.unreachable = errors.New("connection refused")
	if _, err := (preflightStep{}).run(ctx, w.migration(t)); err == nil || !strings.Contains(err.Error(), "https://c0:6443") {
		t.Fatalf("unreachable: %v", err)
	}
	w.cluster.unreachable = nil

	w.cluster.asc = map[string]string{}
	if _, err := (preflightStep{}).run(ctx, w.migration(t)); err == nil || !strings.Contains(err.Error(), "AgentServiceConfig") {
		t.Fatalf("a foreign AgentServiceConfig: %v", err)
	}
	// The one this migration created (a rerun after the service step).
	m := w.migration(t)
	m.state.Digest = "sha256:abc"
	w.cluster.asc = map[string]string{ProvenanceAnnotation: "sha256:abc"}
	if d, err := (preflightStep{}).run(ctx, m); err != nil || !strings.Contains(d, "the one this migration created") {
		t.Fatalf("own AgentServiceConfig: %q %v", d, err)
	}
	w.cluster.asc = nil

	one := int32(1)
	w.cluster.hasService, w.cluster.replicas = true, &one
	if _, err := (preflightStep{}).run(ctx, w.migration(t)); err == nil || !strings.Contains(Hint(err), "--force") || w.cluster.scaled {
		t.Fatalf("a running service without --force: %v scaled=%v", err, w.cluster.scaled)
	}
	w.o.Force = true
	if d, err := (preflightStep{}).run(ctx, w.migration(t)); err != nil || !w.cluster.scaled || !strings.Contains(d, "scaled assisted-service") {
		t.Fatalf("--force: %q %v scaled=%v", d, err, w.cluster.scaled)
	}
}

func TestBundle_CreatesSignsAndEncryptsToAGeneratedKey(t *testing.T) {
	w := newWorld(t, true)
	w.o.Live = true
	w.db.watermark = Watermark{WALLSN: "0/16B3748", Sessions: 1}
	m := w.migration(t)
	detail, err := bundleStep{}.run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.bundles.created) != 1 {
		t.Fatalf("%d bundles created", len(w.bundles.created))
	}
	c := w.bundles.created[0]
	if c.SigningKey == nil || len(c.Recipients) != 1 || c.Spool.Dir != "/spool" {
		t.Fatalf("create options: signing key %v, %d recipient(s), spool %q", c.SigningKey != nil, len(c.Recipients), c.Spool.Dir)
	}
	st := m.state
	if st.Recipient != c.Recipients[0].(interface{ String() string }).String() {
		t.Fatalf("the state's recipient %q is not the bundle's", st.Recipient)
	}
	if fi, err := os.Stat(st.IdentityPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v %v", fi, err)
	}
	want := "reg.example.com:5000/assisted/node0@sha256:" + strings.Repeat("1", 64)
	if st.Pinned != want || st.Digest != "sha256:"+strings.Repeat("1", 64) {
		t.Fatalf("pinned %q, want %q", st.Pinned, want)
	}
	if len(st.ClusterIDs) != 1 || st.ClusterIDs[0] != "c-1" {
		t.Fatalf("cluster ids %v, want the database's live cluster", st.ClusterIDs)
	}
	if st.Watermark == nil || st.Watermark.WALLSN != "0/16B3748" {
		t.Fatalf("watermark %+v", st.Watermark)
	}
	if !strings.Contains(detail, "2.0 KiB in 1 layers") || !strings.Contains(detail, "signed by sha256:signer") {
		t.Fatalf("detail %q", detail)
	}
}

func TestBundle_ReusesOrReplacesTheEarlierBundle(t *testing.T) {
	w := newWorld(t, true)
	m := w.migration(t)
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	first := m.state.Pinned
	m.state.Steps[StepRestore] = &StepState{State: StateDone}
	w.bundles.exists = map[string]bool{first: true}
	d, err := bundleStep{}.run(context.Background(), m)
	if err != nil || !strings.HasPrefix(d, "reused ") || len(w.bundles.created) != 1 || !m.state.Done(StepRestore) {
		t.Fatalf("reuse: %q %v, %d created", d, err, len(w.bundles.created))
	}
	// Gone from the registry: a new bundle, and the later steps forgotten.
	w.bundles.exists = nil
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if len(w.bundles.created) != 2 || m.state.Pinned == first || m.state.Done(StepRestore) {
		t.Fatalf("replace: %d created, pinned %s, restore done %v", len(w.bundles.created), m.state.Pinned, m.state.Done(StepRestore))
	}
	if !strings.Contains(w.notes(), "is gone or not signed by this run's key") {
		t.Fatalf("no note about the replaced bundle: %q", w.notes())
	}
}

func TestBundle_GivenRecipientsAndLocalTargets(t *testing.T) {
	w := newWorld(t, true)
	w.o.Create.Database = nil
	w.o.Ref.Transport, w.o.Ref.Path, w.o.Ref.Registry, w.o.Ref.Repository = "oci", t.TempDir(), "", ""
	w.o.NoEncryption = true
	w.bundles.metaIDs = []string{"c-2", "c-3"}
	m := w.migration(t)
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	c := w.bundles.created[0]
	if len(c.Recipients) != 0 || c.Spool.Dir != "" || m.state.Recipient != "" {
		t.Fatalf("unencrypted local bundle: %d recipients, spool %q", len(c.Recipients), c.Spool.Dir)
	}
	if len(m.state.ClusterIDs) != 2 {
		t.Fatalf("without a database the metadata's clusters: %v", m.state.ClusterIDs)
	}
}

func TestRestoreDirect_InProcess(t *testing.T) {
	w := newWorld(t, true)
	m := w.migration(t)
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	detail, err := restoreStep{}.run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	got := w.restorer.got
	if got == nil || got.Ref != m.state.Pinned || got.TargetDB != targetDSN || got.DataDir != "/mnt/data" || got.Namespace != "mce" ||
		got.ServiceURL != w.o.ServiceURL || got.NamespaceMapping["cluster0"] != "c0" {
		t.Fatalf("restore options %+v", got)
	}
	signer, _, err := m.state.Signer()
	if err != nil || len(got.Signers) != 1 || got.Signers[0].Fingerprint != signer.Fingerprint {
		t.Fatalf("the restore must trust exactly the run's signing key: %v", got.Signers)
	}
	if len(got.Identities) != 1 {
		t.Fatalf("%d identities, want the generated one", len(got.Identities))
	}
	if !strings.Contains(detail, "(2 phase(s) ran)") {
		t.Fatalf("detail %q", detail)
	}
	var phases []string
	for _, e := range w.events {
		if e.Type == EventRestore {
			phases = append(phases, string(e.Restore.Type)+" "+e.Restore.Phase)
		}
	}
	if strings.Join(phases, ",") != "start database,done database" {
		t.Fatalf("restore events forwarded: %v", phases)
	}
	w.restorer.err = errors.New("target not empty")
	if _, err := (restoreStep{}).run(context.Background(), m); err == nil || err.Error() != "target not empty" {
		t.Fatalf("the restore's error must come back as it is: %v", err)
	}
}

func TestRestoreJob_AppliesTheJob(t *testing.T) {
	w := newWorld(t, false)
	auths := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auths, []byte(`{"auths":{"quay.io":{"auth":"b3RoZXI6c2VjcmV0"},"https://reg.example.com:5000":{"auth":"dXNlcjpwYXNz"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w.o.Registry.AuthFile = auths
	w.o.Registry.PlainHTTP = true
	m := w.migration(t)
	if _, err := (preflightStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	detail, err := restoreStep{}.run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !w.cluster.pgSecret || w.restorer.got != nil {
		t.Fatalf("postgres Secret %v; in-process restore ran: %v", w.cluster.pgSecret, w.restorer.got != nil)
	}
	var jobs, pvcs int
	var secretData []string
	for _, obj := range w.cluster.applied {
		switch o := obj.(type) {
		case *batchv1.Job:
			jobs++
			args := strings.Join(o.Spec.Template.Spec.Containers[0].Args, " ")
			for _, want := range []string{m.state.Pinned, "--service-url " + w.o.ServiceURL, "--namespace-mapping cluster0=c0", "--plain-http", "--signer"} {
				if !strings.Contains(args, want) {
					t.Errorf("Job args %q lack %q", args, want)
				}
			}
		case *corev1.PersistentVolumeClaim:
			pvcs++
		case *corev1.Secret:
			for _, v := range o.Data {
				secretData = append(secretData, string(v))
			}
			for _, v := range o.StringData {
				secretData = append(secretData, v)
			}
		}
	}
	all := strings.Join(secretData, "\n")
	if jobs != 1 || pvcs != 2 || !strings.Contains(detail, "PVCs 10Gi, 100Gi") {
		t.Fatalf("%d Jobs, %d PVCs, detail %q", jobs, pvcs, detail)
	}
	if !strings.Contains(all, "AGE-SECRET-KEY") || strings.Contains(all, "PRIVATE KEY") {
		t.Fatal("the Secrets must carry the age identity and never the signing private key")
	}
	if !strings.Contains(all, "dXNlcjpwYXNz") || strings.Contains(all, "b3RoZXI6c2VjcmV0") {
		t.Fatalf("the registry Secret must hold the bundle registry's entry only")
	}
}

func TestRestoreJob_RefusesAnUnencryptedBundle(t *testing.T) {
	w := newWorld(t, false)
	w.o.Ref.Transport, w.o.Ref.Path, w.o.Ref.Registry, w.o.Ref.Repository = "oci", t.TempDir(), "", ""
	w.o.NoEncryption = true
	m := w.migration(t)
	if _, err := (bundleStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if _, err := (restoreStep{}).run(context.Background(), m); err == nil || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("%v", err)
	}
}

func TestRegistryAuthForHost(t *testing.T) {
	f := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(f, []byte(`{"auths":{"quay.io":{"auth":"b3RoZXI6c2VjcmV0"},"https://reg.example.com:5000":{"auth":"dXNlcjpwYXNz"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := registryAuthForHost(context.Background(), f, "reg.example.com:5000")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Auths) != 1 || out.Auths["reg.example.com:5000"].Auth != "dXNlcjpwYXNz" {
		t.Fatalf("want only reg.example.com:5000, got %s", got)
	}
	if none, err := registryAuthForHost(context.Background(), f, "other:1"); none != nil || err != nil {
		t.Fatalf("no entry should give no Secret, got %s %v", none, err)
	}
	if err := os.WriteFile(f, []byte(`{"auths": "s3cret`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := registryAuthForHost(context.Background(), f, "x"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a damaged file: %v (must not quote it)", err)
	}
}

func TestWait(t *testing.T) {
	w := newWorld(t, false)
	m := w.migration(t)
	m.state.Digest = "sha256:" + strings.Repeat("a", 64)
	w.cluster.statuses = []string{"waiting", "running (phase database)"}
	d, err := waitStep{}.run(context.Background(), m)
	if err != nil || d != "receipt for "+m.state.Digest+" with phases database,files,auth,resources" {
		t.Fatalf("%q %v", d, err)
	}
	if w.notes() != "waiting\nrunning (phase database)\n" {
		t.Fatalf("statuses as notes: %q", w.notes())
	}
	w.cluster.receipt = nil // never comes: the timeout (1s) ends the wait
	_, err = waitStep{}.run(context.Background(), m)
	if err == nil || !strings.Contains(Hint(err), "logs job/") {
		t.Fatalf("job mode timeout must point at the Job's logs: %v (%q)", err, Hint(err))
	}
	w.cluster.waitErr = &waitfor.RestoreFailedError{Phase: "files"}
	if _, err := (waitStep{}).run(context.Background(), m); !errors.As(err, new(*waitfor.RestoreFailedError)) {
		t.Fatalf("a failed restore comes back as it is: %v", err)
	}
}

func TestService(t *testing.T) {
	w := newWorld(t, true)
	m := w.migration(t)
	m.state.Digest = "sha256:d"
	w.cluster.pvcs = map[string]resource.Quantity{"postgres": resource.MustParse("10Gi"), "assisted-service": resource.MustParse("50Gi")}
	if _, err := (serviceStep{}).run(context.Background(), m); err == nil || !strings.Contains(err.Error(), "requests 50Gi but the AgentServiceConfig asks for 100Gi") || len(w.cluster.applied) != 0 {
		t.Fatalf("a PVC of another size must stop the step before anything is applied: %v", err)
	}
	w.cluster.pvcs["assisted-service"] = resource.MustParse("100Gi")
	if d, err := (serviceStep{}).run(context.Background(), m); err != nil || !strings.HasPrefix(d, "created AgentServiceConfig agent") {
		t.Fatalf("%q %v", d, err)
	}
	if len(w.cluster.applied) != 1 || w.cluster.digests[0] != "sha256:d" {
		t.Fatalf("applied %d objects with digests %v", len(w.cluster.applied), w.cluster.digests)
	}
	w.o.AgentServiceConfig = nil
	m = w.migration(t)
	if d, err := (serviceStep{}).run(context.Background(), m); err != nil || !strings.HasPrefix(d, skippedPrefix) {
		t.Fatalf("no AgentServiceConfig: %q %v", d, err)
	}
}

func TestSwitchover(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true)
	m := w.migration(t)
	m.state.Digest, m.state.ClusterIDs = "sha256:d", []string{"c-1", "c-2"}
	if _, err := (switchoverStep{}).run(ctx, m); err == nil || !strings.Contains(Hint(err), "--cluster-id") {
		t.Fatalf("two clusters: %v", err)
	}
	m.state.ClusterIDs = nil
	w.db.clusterIDs = []string{"c-9"}
	d, err := switchoverStep{}.run(ctx, m)
	if err != nil || !strings.Contains(d, "controller switched to https://assisted.c0.example.com (1 change(s)") {
		t.Fatalf("%q %v", d, err)
	}
	if w.db.calls[len(w.db.calls)-1] != "clusters "+targetDSN {
		t.Fatalf("cluster 0's id comes from the restored database: %v", w.db.calls)
	}
	pub, _ := w.cluster.key.PublicPEM()
	claims, err := auth.VerifyToken(pub, w.cluster.switched.Token, time.Now())
	if err != nil || claims["cluster_id"] != "c-9" {
		t.Fatalf("the controller's token: %v %v", claims, err)
	}
	sec := w.cluster.applied[0].(*corev1.Secret)
	if sec.Name != HandoverSecret || string(sec.Data[HandoverTokenKey]) != w.cluster.switched.Token || w.cluster.digests[0] != "sha256:d" {
		t.Fatalf("handover Secret %s", sec.Name)
	}
	w.cluster.switchErr = switchover.ErrControllerNotFound
	if d, err := (switchoverStep{}).run(ctx, m); err != nil || !strings.HasPrefix(d, skippedPrefix) {
		t.Fatalf("no controller: %q %v", d, err)
	}
	w.o.ServiceURL = ""
	if d, err := (switchoverStep{}).run(ctx, w.migration(t)); err != nil || !strings.HasPrefix(d, skippedPrefix+"no --service-url") {
		t.Fatalf("no URL: %q %v", d, err)
	}
}

// TestJobArgs_ImageServiceURL: the restore Job gets the same URL flags as an
// in-process restore (restore's flag names, pinned).
func TestJobArgs_ImageServiceURL(t *testing.T) {
	args := strings.Join(jobArgs(Options{ServiceURL: "https://as.c0.example.com", ImageServiceURL: "https://is.c0.example.com"}), " ")
	for _, want := range []string{"--service-url https://as.c0.example.com", "--image-service-url https://is.c0.example.com"} {
		if !strings.Contains(args, want) {
			t.Errorf("job args %q lack %q", args, want)
		}
	}
	if args := strings.Join(jobArgs(Options{}), " "); strings.Contains(args, "image-service-url") {
		t.Errorf("job args %q name an image service that was not given", args)
	}
}
