package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func journalRestore(t *testing.T, cs kubernetes.Interface, ns, digest string, fail bool, phases ...string) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, cs, ns, digest, "")
	if err != nil {
		t.Fatal(err)
	}
	var ps []journal.Phase
	for _, name := range phases {
		ps = append(ps, journal.Phase{Name: name, Run: func(context.Context) (journal.Counts, error) {
			if fail {
				return nil, errors.New("target database is not empty")
			}
			return journal.Counts{"items": 3}, nil
		}})
	}
	_, err = journal.Run(ctx, j, ps, journal.RunOptions{})
	if fail {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Receipt(ps, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := journal.WriteReceipt(ctx, cs, ns, r); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForRestoreComplete(t *testing.T) {
	k := harness.SharedKube(t)
	cs := k.Clientset(t)
	p := harness.NewPlugin(t)
	digest := "sha256:" + strings.Repeat("a1", 32)
	other := "sha256:" + strings.Repeat("b2", 32)
	run := func(ns, d string, extra ...string) harness.Result {
		args := append([]string{"wait-for", "restore-complete", "--kubeconfig", k.Kubeconfig, "-n", ns, "--bundle", d, "--interval", "200ms"}, extra...)
		return p.Run(t, args...)
	}

	t.Run("receipt of this bundle", func(t *testing.T) {
		ns := k.Namespace(t)
		journalRestore(t, cs, ns, digest, false, "database", "files", "auth", "resources")
		r := run(ns, digest, "-o", "json", "--timeout", "30s")
		if r.ExitCode != 0 {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
		var out struct {
			Receipt journal.Receipt `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Receipt.BundleDigest != digest || len(out.Receipt.Phases) != 4 {
			t.Fatalf("result %s (%v)", r.Stdout, err)
		}
	})
	t.Run("restore finishing while waiting", func(t *testing.T) {
		ns := k.Namespace(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(2 * time.Second)
			ctx := context.Background()
			j, err := journal.Open(ctx, cs, ns, digest, "")
			if err != nil {
				return
			}
			ps := []journal.Phase{{Name: "database", Run: func(context.Context) (journal.Counts, error) { return nil, nil }},
				{Name: "files", Run: func(context.Context) (journal.Counts, error) { return nil, nil }}}
			if _, err := journal.Run(ctx, j, ps, journal.RunOptions{}); err != nil {
				return
			}
			r, _ := j.Receipt(ps, time.Now())
			_ = journal.WriteReceipt(ctx, cs, ns, r)
		}()
		r := run(ns, digest, "--timeout", "60s")
		<-done
		if r.ExitCode != 0 || !strings.Contains(r.Stdout, "complete") {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("wrong digest never exits 0", func(t *testing.T) {
		ns := k.Namespace(t)
		journalRestore(t, cs, ns, other, false, "database", "files")
		r := run(ns, digest, "--timeout", "30s")
		if r.ExitCode != 32 || !strings.Contains(r.Stderr, other) {
			t.Fatalf("exit %d, want 32\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("failed restore never exits 0", func(t *testing.T) {
		ns := k.Namespace(t)
		journalRestore(t, cs, ns, digest, true, "database", "files")
		r := run(ns, digest, "--timeout", "30s")
		if r.ExitCode != 31 || !strings.Contains(r.Stderr, "not empty") {
			t.Fatalf("exit %d, want 31\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ns := k.Namespace(t)
		r := run(ns, digest, "--timeout", "2s")
		if r.ExitCode != 30 || !strings.Contains(r.Stderr, "timed out") {
			t.Fatalf("exit %d, want 30\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("not a digest", func(t *testing.T) {
		r := run("default", "latest", "--timeout", "2s")
		if r.ExitCode != 2 {
			t.Fatalf("exit %d, want 2\n%s", r.ExitCode, r.Combined())
		}
	})
}

func TestSwitchover(t *testing.T) {
	k := harness.SharedKube(t)
	cs := k.Clientset(t)
	ctx := context.Background()
	ctrlNS := k.Namespace(t)
	restoreNS := k.Namespace(t)
	mustCreate := func(err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	_, err := cs.CoreV1().ConfigMaps(ctrlNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-config"},
		Data: map[string]string{"inventory-url": "http://192.168.111.80:8090", "cluster-id": "c0ffee00-0000-4000-8000-000000000000"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Secrets(ctrlNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-secret"},
		Data: map[string][]byte{"pull-secret-token": []byte("node0-token")}}, metav1.CreateOptions{})
	mustCreate(err)
	const minted = "eyJhbGciOiJFUzI1NiJ9.minted-by-restore.sig"
	_, err = cs.CoreV1().Secrets(restoreNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-assisted-handover"},
		Data: map[string][]byte{"controller-token": []byte(minted)}}, metav1.CreateOptions{})
	mustCreate(err)
	// No controller-manager runs: the ServiceAccount admission needs "default" by hand.
	_, err = cs.CoreV1().ServiceAccounts(ctrlNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Pods(ctrlNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-x1",
		Labels: map[string]string{"app": "assisted-installer-controller"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/controller:1"}}}}, metav1.CreateOptions{})
	mustCreate(err)

	p := harness.NewPlugin(t)
	url := "https://assisted-service-multicluster-engine.apps.c0.example.com"
	args := []string{"switchover", "--kubeconfig", k.Kubeconfig, "-n", restoreNS, "--controller-namespace", ctrlNS, "--service-url", url}

	dry := p.MustRun(t, append(args, "--dry-run")...)
	if !strings.Contains(dry.Stdout, "would change") {
		t.Fatalf("dry run:\n%s", dry.Combined())
	}
	r := p.MustRun(t, append(args, "-o", "json")...)
	for _, out := range []string{r.Stdout, r.Stderr, dry.Stdout, dry.Stderr} {
		if strings.Contains(out, minted) || strings.Contains(out, "node0-token") {
			t.Fatalf("a token leaked into the output:\n%s", out)
		}
	}
	cm, _ := cs.CoreV1().ConfigMaps(ctrlNS).Get(ctx, "assisted-installer-controller-config", metav1.GetOptions{})
	if cm.Data["inventory-url"] != url || cm.Data["cluster-id"] == "" {
		t.Fatalf("ConfigMap data = %v", cm.Data)
	}
	sec, _ := cs.CoreV1().Secrets(ctrlNS).Get(ctx, "assisted-installer-controller-secret", metav1.GetOptions{})
	if string(sec.Data["pull-secret-token"]) != minted {
		t.Fatalf("controller token not switched")
	}
	if _, err := cs.CoreV1().Pods(ctrlNS).Get(ctx, "assisted-installer-controller-x1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("controller pod not restarted: %v", err)
	}
	var res struct {
		RestartedPods []string `json:"restartedPods"`
		Changes       []any    `json:"changes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || len(res.RestartedPods) != 1 || len(res.Changes) != 2 {
		t.Fatalf("result %s (%v)", r.Stdout, err)
	}
	again := p.MustRun(t, args...)
	if !strings.Contains(again.Stdout, "already points at the new service") {
		t.Fatalf("second run:\n%s", again.Combined())
	}
}
