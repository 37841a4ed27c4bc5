package journal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	ns     = "multicluster-engine"
	digest = "sha256:3f1d2c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff00"
)

var errKilled = errors.New("killed")

// target simulates what a restore changes (database, files, resources); a
// budget of steps simulates a kill at any point.
type target struct {
	state  map[string]string
	budget int // steps left; < 0 means unlimited
	runs   map[string]int
}

func (tg *target) step(f func()) error {
	if tg.budget == 0 {
		return errKilled
	}
	if tg.budget > 0 {
		tg.budget--
	}
	f()
	return nil
}

// phases are idempotent: every step sets or removes keys to fixed values.
func (tg *target) phases() []Phase {
	mk := func(name string, steps ...func()) Phase {
		return Phase{Name: name, Run: func(ctx context.Context) (Counts, error) {
			tg.runs[name]++
			for _, s := range steps {
				if err := tg.step(s); err != nil {
					return nil, err
				}
			}
			// A kill after the work and before the journal records it.
			if err := tg.step(func() {}); err != nil {
				return nil, err
			}
			return Counts{"steps": int64(len(steps))}, nil
		}}
	}
	set := func(k, v string) func() { return func() { tg.state[k] = v } }
	return []Phase{
		mk("database", set("db.clusters", "2 rows"), set("db.hosts", "3 rows"), set("db.analyzed", "yes")),
		mk("files", set("files.staging", "tree"), func() { delete(tg.state, "files.staging"); tg.state["files.data"] = "tree" }),
		mk("kubekeys", set("db.kubekeys", "demo/demo")),
		mk("resources", set("cr.cd", "demo"), set("cr.aci", "demo"), set("cr.agent", "h1")),
	}
}

func restore(t *testing.T, c *fake.Clientset, tg *target) error {
	t.Helper()
	j, err := Open(context.Background(), c, ns, digest, "opts-1")
	if err != nil {
		t.Fatal(err)
	}
	ph := tg.phases()
	if _, err := Run(context.Background(), j, ph, RunOptions{}); err != nil {
		return err
	}
	r, err := j.Receipt(ph, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return WriteReceipt(context.Background(), c, ns, r)
}

func TestRun_KilledAnywhereConverges(t *testing.T) {
	ref := &target{state: map[string]string{}, budget: -1, runs: map[string]int{}}
	if err := restore(t, fake.NewClientset(), ref); err != nil {
		t.Fatal(err)
	}
	steps := 3 + 1 + 2 + 1 + 1 + 1 + 3 + 1 // work steps plus the record point of each phase
	for kill := 0; kill < steps; kill++ {
		t.Run(fmt.Sprintf("killed after %d steps", kill), func(t *testing.T) {
			c := fake.NewClientset()
			tg := &target{state: map[string]string{}, budget: kill, runs: map[string]int{}}
			if err := restore(t, c, tg); !errors.Is(err, errKilled) {
				t.Fatalf("first run: err = %v, want killed", err)
			}
			if _, err := ReadReceipt(context.Background(), c, ns, digest); !errors.Is(err, ErrNoReceipt) {
				t.Fatalf("receipt exists after a killed run: %v", err)
			}
			j, _ := Open(context.Background(), c, ns, digest, "opts-1")
			doneBefore := map[string]bool{}
			for _, p := range tg.phases() {
				doneBefore[p.Name] = j.Done(p.Name)
			}
			firstRuns := maps.Clone(tg.runs)
			tg.budget = -1
			if err := restore(t, c, tg); err != nil {
				t.Fatalf("rerun: %v", err)
			}
			if !maps.Equal(tg.state, ref.state) {
				t.Errorf("end state after kill+rerun:\n got %v\nwant %v", tg.state, ref.state)
			}
			for name, done := range doneBefore {
				if again := tg.runs[name] - firstRuns[name]; done && again != 0 {
					t.Errorf("phase %s was done but ran again", name)
				} else if !done && again != 1 {
					t.Errorf("phase %s was not done and ran %d times on rerun", name, again)
				}
			}
			r, err := ReadReceipt(context.Background(), c, ns, digest)
			if err != nil || strings.Join(r.Phases, ",") != "database,files,kubekeys,resources" || r.Counts["database"]["steps"] != 3 {
				t.Fatalf("receipt = %+v, err = %v", r, err)
			}
		})
	}
}

func TestRun_VerifyFailureRunsAgain(t *testing.T) {
	c := fake.NewClientset()
	tg := &target{state: map[string]string{}, budget: -1, runs: map[string]int{}}
	if err := restore(t, c, tg); err != nil {
		t.Fatal(err)
	}
	delete(tg.state, "files.data") // someone wiped the files after the restore
	j, _ := Open(context.Background(), c, ns, digest, "opts-1")
	ph := tg.phases()
	ph[1].Verify = func(context.Context) error {
		if tg.state["files.data"] == "" {
			return errors.New("files missing")
		}
		return nil
	}
	out, err := Run(context.Background(), j, ph, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !out[1].Ran || out[1].Rechecked != "files missing" || out[0].Ran || tg.state["files.data"] != "tree" {
		t.Fatalf("outcomes = %+v, state = %v", out, tg.state)
	}
}

func TestOpen_Checks(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	if _, err := Open(ctx, c, ns, digest, "a"); err != nil {
		t.Fatal(err)
	}
	var fm *FingerprintMismatchError
	if _, err := Open(ctx, c, ns, digest, "b"); !errors.As(err, &fm) {
		t.Fatalf("other options: err = %v", err)
	}
	for _, bad := range []string{"", "sha256", "sha256:XYZ", "latest"} {
		if _, err := Open(ctx, c, ns, bad, ""); err == nil {
			t.Errorf("digest %q accepted", bad)
		}
	}
	cm, _ := c.CoreV1().ConfigMaps(ns).Get(ctx, "kubectl-assisted-journal-sha256-"+digest[7:], metav1.GetOptions{})
	if cm.Labels[LabelRole] != RoleJournal || cm.Annotations[AnnotationDigest] != digest || len(cm.Labels[LabelDigest]) > 63 {
		t.Errorf("journal metadata = %v %v", cm.Labels, cm.Annotations)
	}
}

func TestPut_RetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	j, err := Open(ctx, c, ns, digest, "")
	if err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, j.Name(), errors.New("changed"))
		}
		return false, nil, nil
	})
	if err := j.Put(ctx, "database", Record{State: StateDone}); err != nil {
		t.Fatal(err)
	}
	j2, _ := Open(ctx, c, ns, digest, "")
	if !j2.Done("database") {
		t.Fatal("record lost after a conflict")
	}
}

func TestReceipt_RoundTripAndVersion(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := Receipt{BundleDigest: digest, Phases: []string{"database", "resources"}, StartedAt: start, CompletedAt: start.Add(time.Minute),
		Counts: map[string]Counts{"database": {"rows": 12}}}
	if err := WriteReceipt(ctx, c, ns, want); err != nil {
		t.Fatal(err)
	}
	if err := WriteReceipt(ctx, c, ns, want); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	got, err := ReadReceipt(ctx, c, ns, digest)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %+v, %v; want %+v", got, err, want)
	}
	name, _ := ReceiptName(digest)
	cm, _ := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	cm.Data[KeyFormatVersion] = "2"
	_, _ = c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	if _, err := ReadReceipt(ctx, c, ns, digest); err == nil || !strings.Contains(err.Error(), "format version") {
		t.Fatalf("major 2 receipt: err = %v", err)
	}
}
