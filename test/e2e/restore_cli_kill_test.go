package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// killerWebhook is a validating admission webhook that holds the first request
// matching an armed trigger until the test has SIGKILLed the restore, then
// denies it: the restore dies at exactly that point, before that write. Each
// subtest arms its own trigger (keyed by its namespace), so they run in parallel.
type killerWebhook struct {
	mu    sync.Mutex
	armed map[string]*killTrigger
}

type killTrigger struct {
	match    func(req *admissionv1.AdmissionRequest, obj *unstructured.Unstructured) bool
	hit      chan string
	release  chan struct{}
	released bool
	fired    bool
}

// arm sets the trigger of key and returns the channel that reports when it fired.
func (w *killerWebhook) arm(key string, match func(*admissionv1.AdmissionRequest, *unstructured.Unstructured) bool) <-chan string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed == nil {
		w.armed = map[string]*killTrigger{}
	}
	k := &killTrigger{match: match, hit: make(chan string, 1), release: make(chan struct{})}
	w.armed[key] = k
	return k.hit
}

// releaseHeld lets key's held request go (denied); released early, the
// trigger denies at once when it fires. A trigger fires once.
func (w *killerWebhook) releaseHeld(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if k := w.armed[key]; k != nil && !k.released {
		close(k.release)
		k.released = true
	}
}

func (w *killerWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	obj := &unstructured.Unstructured{}
	_ = json.Unmarshal(req.Object.Raw, &obj.Object)
	var fired *killTrigger
	w.mu.Lock()
	for _, k := range w.armed {
		if !k.fired && k.match(req, obj) {
			k.fired, fired = true, k
			break
		}
	}
	w.mu.Unlock()
	if fired != nil {
		fired.hit <- fmt.Sprintf("%s %s %s/%s", req.Operation, obj.GetKind(), obj.GetNamespace(), obj.GetName())
		select {
		case <-fired.release:
		case <-time.After(25 * time.Second):
		}
		resp.Allowed = false
		resp.Result = &metav1.Status{Message: "kat-kill: the restore was killed at this write"}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&review)
}

// startKillerWebhook registers the webhook for restore journals in namespaces
// labelled kat-kill=id and for CRs labelled kat-order=id.
func startKillerWebhook(t *testing.T, k *harness.Kube, id string) *killerWebhook {
	t.Helper()
	w := &killerWebhook{}
	certs := harness.NewCertPair(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certs.CertFile, certs.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := fmt.Sprintf("https://%s/validate", ln.Addr().(*net.TCPAddr).String())
	fail, none, timeout := admissionregv1.Fail, admissionregv1.SideEffectClassNone, int32(30)
	hook := func(name string, ops []admissionregv1.OperationType, groups, resources []string, nsSel, objSel map[string]string) admissionregv1.ValidatingWebhook {
		h := admissionregv1.ValidatingWebhook{
			Name: name, ClientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: certs.CAPEM},
			AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail, TimeoutSeconds: &timeout,
			ObjectSelector: &metav1.LabelSelector{MatchLabels: objSel},
			Rules: []admissionregv1.RuleWithOperations{{Operations: ops,
				Rule: admissionregv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources}}},
		}
		if nsSel != nil {
			h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: nsSel}
		}
		return h
	}
	name := "kat-kill-" + id
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{
			hook("journal.kill.kat.example.com", []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
				[]string{""}, []string{"configmaps"}, map[string]string{"kat-kill": id}, map[string]string{"kubectl-assisted.io/role": "restore-journal"}),
			hook("objects.kill.kat.example.com", []admissionregv1.OperationType{admissionregv1.Create},
				[]string{"", "hive.openshift.io", "extensions.hive.openshift.io", "agent-install.openshift.io", "metal3.io"},
				[]string{"secrets", "configmaps", "clusterdeployments", "agentclusterinstalls", "nmstateconfigs", "infraenvs", "baremetalhosts", "agents", "agentclassifications"},
				nil, map[string]string{"kat-order": id}),
		},
	}
	cs := k.Clientset(t)
	ctx := context.Background()
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// Wait until the API server calls it: a probe journal in a labelled
	// namespace must be denied by it.
	probeNS := k.Namespace(t)
	labelNamespace(t, k, probeNS, id)
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.arm("probe", func(_ *admissionv1.AdmissionRequest, o *unstructured.Unstructured) bool {
			return o.GetName() == "probe"
		})
		w.releaseHeld("probe")
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{"kubectl-assisted.io/role": "restore-journal"}}}
		_, err := cs.CoreV1().ConfigMaps(probeNS).Create(ctx, probe, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "kat-kill") {
			break
		}
		_ = cs.CoreV1().ConfigMaps(probeNS).Delete(ctx, "probe", metav1.DeleteOptions{})
		if time.Now().After(deadline) {
			t.Fatalf("the kill webhook never became active (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return w
}

func labelNamespace(t *testing.T, k *harness.Kube, ns, id string) {
	t.Helper()
	cs := k.Clientset(t)
	n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["kat-kill"] = id
	if _, err := cs.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// journalUpdate triggers on the journal update that records phase in state.
func journalUpdate(ns, phase, state string) func(*admissionv1.AdmissionRequest, *unstructured.Unstructured) bool {
	return func(req *admissionv1.AdmissionRequest, o *unstructured.Unstructured) bool {
		if req.Operation != admissionv1.Update || o.GetNamespace() != ns {
			return false
		}
		v, _, _ := unstructured.NestedString(o.Object, "data", "phase."+phase)
		return strings.Contains(v, `"state":"`+state+`"`)
	}
}

// restoreTarget is one cluster 0: a namespace, a database and a data directory.
type restoreTarget struct {
	t                   *testing.T
	ns, dir, kubeconfig string
	db                  *harness.Database
	plugin              *harness.Plugin
}

// TestRestoreCLI_KilledAnywhereThenRerunConverges SIGKILLs the restore at
// phase boundaries (held by an admission webhook at the exact write) and in
// the middle of the database load and of the resources, reruns it with the
// same flags, and compares the end state with an uninterrupted restore: the
// rows, the file tree with xattrs, the objects and the receipt.
func TestRestoreCLI_KilledAnywhereThenRerunConverges(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	idNS := k.Namespace(t)
	id := idNS
	identity, recipient := ageKey(t)
	src := node0Database(t, assisted.Scale{Clusters: 7, Hosts: 40, Events: 12000, InventoryBytes: 6000})
	data := assistedData(t, plantedKubeadmin)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
	makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: data}, Resources: exportedObjects(node0Export(t, id))})
	hook := startKillerWebhook(t, k, id)

	newTarget := func(t *testing.T) restoreTarget {
		ns := k.Namespace(t)
		labelNamespace(t, k, ns, id)
		db := emptyDatabase(t)
		pp := *p
		cfg, err := pgx.ParseConfig(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		// --db-from-env, as the in-cluster Job runs it.
		pp.Env = []string{"DB_HOST=" + cfg.Host, fmt.Sprintf("DB_PORT=%d", cfg.Port), "DB_USER=" + cfg.User, "DB_PASS=" + plantedDBPassword, "DB_NAME=" + cfg.Database}
		return restoreTarget{t: t, ns: ns, dir: filepath.Join(t.TempDir(), "data"), kubeconfig: k.KubeconfigFor(t, harness.AdminUser, ns), db: db, plugin: &pp}
	}
	args := func(tg restoreTarget) []string {
		return []string{"restore", ref, "--signer", signerFile(t), "--identity", identity, "--db-from-env", "--data-dir", tg.dir, "--kubeconfig", tg.kubeconfig, "-n", tg.ns,
			"--namespace-mapping", "spoke-cluster=" + tg.ns + ",demo=" + tg.ns + ",agents=" + tg.ns, "--service-url", "https://assisted.cluster0.example.com", "-o", "json"}
	}
	type state struct {
		rows, files, objects map[string]string
		keys                 string
	}
	endOf := func(t *testing.T, tg restoreTarget) state {
		conn := tg.db.Connect(t)
		keys := keysOf(t, conn, `SELECT kube_key_name || '/' || kube_key_namespace, (SELECT name || '/' || kube_key_namespace FROM infra_envs WHERE id = '`+node0Infra+`') FROM clusters WHERE id = '`+node0Cluster+`'`)
		return state{rows: tableSums(t, tg.db.URL, "kube_key_namespace"), files: fileTree(t, tg.dir), objects: objectsState(t, k, tg.ns, id),
			keys: strings.ReplaceAll(keys, tg.ns, "NS")}
	}

	ref0 := newTarget(t)
	if r := ref0.plugin.Run(t, args(ref0)...); r.ExitCode != 0 {
		t.Fatalf("uninterrupted restore: exit %d\n%s", r.ExitCode, r.Combined())
	}
	want := endOf(t, ref0)
	if len(want.objects) != 10 || want.keys != "single-node/NS|myinfraenv/NS" {
		t.Fatalf("reference restore: %d objects, keys %s", len(want.objects), want.keys)
	}

	// Each watcher of pg_stat_activity has a connection of its own: the
	// subtests run in parallel.
	admin := func(t *testing.T) *pgx.Conn { return src.Connect(t) }

	creates := func(ns string, n int) func(*admissionv1.AdmissionRequest, *unstructured.Unstructured) bool {
		seen := 0
		return func(req *admissionv1.AdmissionRequest, o *unstructured.Unstructured) bool {
			if req.Operation == admissionv1.Create && o.GetNamespace() == ns && o.GetLabels()["kat-order"] == id {
				seen++
				return seen == n
			}
			return false
		}
	}
	tests := []struct {
		name string
		// arm starts watching for the kill point and returns a channel that
		// reports it was reached.
		arm func(tg restoreTarget) <-chan string
		// after checks the state the kill left.
		after func(t *testing.T, tg restoreTarget)
	}{
		{"while COPY loads a table", func(tg restoreTarget) <-chan string {
			hit := make(chan string, 1)
			conn := admin(tg.t)
			go func() {
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					var q string
					err := conn.QueryRow(context.Background(), `SELECT query FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND query ILIKE 'COPY %FROM STDIN%' LIMIT 1`, tg.db.Name).Scan(&q)
					if err == nil {
						hit <- q
						return
					}
				}
			}()
			return hit
		}, func(t *testing.T, tg restoreTarget) {
			waitIdle(t, admin(t), tg.db.Name)
			// What was loaded is in staging schemas only, which the
			// rerun drops.
			if n := visibleTables(t, tg.db.URL); n != 0 || len(journalConfigMaps(t, k, tg.ns)) != 0 {
				t.Fatalf("killed mid-load: %d tables, journal %v; want nothing", n, journalConfigMaps(t, k, tg.ns))
			}
		}},
		{"before commit, creating the journal", func(tg restoreTarget) <-chan string {
			return hook.arm(tg.ns, func(req *admissionv1.AdmissionRequest, o *unstructured.Unstructured) bool {
				return req.Operation == admissionv1.Create && o.GetKind() == "ConfigMap" && o.GetNamespace() == tg.ns
			})
		}, func(t *testing.T, tg restoreTarget) {
			waitIdle(t, admin(t), tg.db.Name)
			if n := visibleTables(t, tg.db.URL); n != 0 || len(journalConfigMaps(t, k, tg.ns)) != 0 {
				t.Fatalf("killed before commit: %d tables, journal %v; want nothing", n, journalConfigMaps(t, k, tg.ns))
			}
			if len(stagingTables(t, tg.db.URL)) == 0 {
				t.Fatal("killed in the final transaction, the restore left no staging tables: it did not stage")
			}
		}},
		{"after commit, before the database phase is recorded", func(tg restoreTarget) <-chan string {
			return hook.arm(tg.ns, journalUpdate(tg.ns, "database", "done"))
		}, func(t *testing.T, tg restoreTarget) {
			if userTables(t, tg.db.URL) == 0 {
				t.Fatal("the database was not committed")
			}
		}},
		{"files in place, not recorded", func(tg restoreTarget) <-chan string {
			return hook.arm(tg.ns, journalUpdate(tg.ns, "files", "done"))
		}, nil},
		{"after the fourth object", func(tg restoreTarget) <-chan string {
			return hook.arm(tg.ns, creates(tg.ns, 5))
		}, nil},
		{"resources applied, no receipt", func(tg restoreTarget) <-chan string {
			return hook.arm(tg.ns, journalUpdate(tg.ns, "resources", "done"))
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t)
			hit := tt.arm(tg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := tg.plugin.Command(ctx, args(tg)...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case what := <-hit:
				_ = cmd.Process.Kill()
				err := <-exited
				hook.releaseHeld(tg.ns)
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
					t.Fatalf("the restore was not killed at %q: %v\n%s", what, err, out.String())
				}
			case err := <-exited:
				t.Fatalf("the restore ended (%v) before the kill point\n%s", err, out.String())
			}
			if tt.after != nil {
				tt.after(t, tg)
			}
			r := tg.plugin.Run(t, args(tg)...)
			if r.ExitCode != 0 {
				t.Fatalf("rerun: exit %d\n%s", r.ExitCode, r.Combined())
			}
			if left := stagingTables(t, tg.db.URL); len(left) > 0 {
				t.Errorf("the rerun left staging tables %v", left)
			}
			got := endOf(t, tg)
			if !reflect.DeepEqual(got.rows, want.rows) || got.keys != want.keys {
				t.Errorf("database differs from the uninterrupted restore: keys %s (want %s)", got.keys, want.keys)
				for tb, w := range want.rows {
					if got.rows[tb] != w {
						t.Errorf("  %s: %s, want %s", tb, got.rows[tb], w)
					}
				}
			}
			if !reflect.DeepEqual(got.files, want.files) {
				t.Errorf("files differ:\n got %v\nwant %v", got.files, want.files)
			}
			if !reflect.DeepEqual(got.objects, want.objects) {
				for name, w := range want.objects {
					if got.objects[name] != w {
						t.Errorf("%s differs:\n got %s\nwant %s", name, got.objects[name], w)
					}
				}
				if len(got.objects) != len(want.objects) {
					t.Errorf("objects: %d, want %d", len(got.objects), len(want.objects))
				}
			}
			rec, err := journal.ReadReceipt(context.Background(), k.Clientset(t), tg.ns, parseRestore(t, r).Digest)
			if err != nil || strings.Join(rec.Phases, ",") != "database,files,auth,resources" {
				t.Errorf("receipt after the rerun: %+v, %v", rec, err)
			}
		})
	}
}

// waitIdle waits until no session of the killed restore is left on database
// db (the server notices the dead client and rolls back).
func waitIdle(t *testing.T, admin *pgx.Conn, db string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var n int
		if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, db).Scan(&n); err == nil && n == 0 {
			return
		}
	}
	t.Fatalf("the killed restore's session on %s did not end", db)
}
