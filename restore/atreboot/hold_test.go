package atreboot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// holdWorld is a hold against a fake clock (starting now: the attempts'
// contexts have real deadlines) and a real migration state directory; the
// migration's operations are scripted.
type holdWorld struct {
	t         *testing.T
	spec      *Spec
	now       time.Time
	lines     []string
	attempts  int
	pushes    int
	onCluster []*Record
	registry  map[string]bool
}

func newHoldWorld(t *testing.T, mode Mode) *holdWorld {
	s := testSpec(mode)
	s.StateDir = t.TempDir()
	s.Timeout, s.HardLimit = Duration(2*time.Minute), Duration(5*time.Minute)
	return &holdWorld{t: t, spec: s, now: time.Now(), registry: map[string]bool{}}
}

func (w *holdWorld) state() (*migrate.State, error) {
	return migrate.LoadState(w.spec.StateDir, w.spec.Ref, w.spec.Target, w.spec.Namespace)
}

// push records a pushed bundle in the migration's state, as the bundle step does.
func (w *holdWorld) push() {
	st, err := w.state()
	if err != nil {
		w.t.Fatal(err)
	}
	st.Digest, st.Pinned = "sha256:"+strings.Repeat("d", 64), "reg.example.com/a/b@sha256:"+strings.Repeat("d", 64)
	st.Steps[migrate.StepBundle] = &migrate.StepState{State: migrate.StateDone}
	if err := st.Save(); err != nil {
		w.t.Fatal(err)
	}
	w.registry[st.Pinned] = true
}

func (w *holdWorld) options(attempt func(ctx context.Context) error) HoldOptions {
	return HoldOptions{
		Spec: w.spec, Hostname: "node0", FinishCommand: []string{"kubectl", "assisted", "migrate", "--to=reg.example.com/a/b:v1", "--target-db=postgres://admin:c0-secret@x/installer"},
		RedactArgs: func(a []string) []string {
			out := append([]string{}, a...)
			out[len(out)-1] = "--target-db=<redacted>"
			return out
		},
		Attempt: func(ctx context.Context) error {
			w.attempts++
			w.now = w.now.Add(20 * time.Second)
			return attempt(ctx)
		},
		State: w.state,
		InRegistry: func(_ context.Context, st *migrate.State) error {
			if w.registry[st.Pinned] {
				return nil
			}
			return errors.New("manifest unknown")
		},
		RecordOnCluster: func(_ context.Context, r *Record) error { w.onCluster = append(w.onCluster, r); return nil },
		Redact:          func(s string) string { return strings.ReplaceAll(s, "c0-secret", "<redacted>") },
		Log:             func(f string, a ...any) { w.lines = append(w.lines, fmt.Sprintf(f, a...)) },
		Now:             func() time.Time { return w.now },
		Sleep:           func(_ context.Context, d time.Duration) { w.now = w.now.Add(d) },
	}
}

func TestHold_RetriesUntilTheMigrationCompletes(t *testing.T) {
	w := newHoldWorld(t, ModeAuto)
	o := w.options(func(context.Context) error {
		if w.attempts < 3 {
			return errors.New("cluster 0's API: connection refused")
		}
		return nil
	})
	o.Push = func(context.Context) error { w.pushes++; w.push(); return nil }
	res, err := Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomeMigrated || res.Attempts != 3 || res.Record != nil || len(w.onCluster) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// The first failure pushed the bundle on its own; later ones found it pushed.
	if w.pushes != 1 {
		t.Fatalf("%d pushes", w.pushes)
	}
}

// TestHold_GivesUpAfterTheTimeoutWithTheBundlePushed: cluster 0 never
// answers; the bundle reached the registry, so the reboot goes on after the
// timeout, with the record on node 0 and (when it answers) on cluster 0.
func TestHold_GivesUpAfterTheTimeoutWithTheBundlePushed(t *testing.T) {
	w := newHoldWorld(t, ModeAuto)
	o := w.options(func(context.Context) error {
		return errors.New("step 1/6 preflight: cluster 0's API (postgres://admin:c0-secret@x): refused")
	})
	o.Push = func(context.Context) error { w.pushes++; w.push(); return nil }
	start := w.now
	res, err := Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomePushed {
		t.Fatalf("%+v %v", res, err)
	}
	if held := w.now.Sub(start); held < 2*time.Minute || held > 2*time.Minute+30*time.Second {
		t.Fatalf("held %s, want the 2m timeout (plus at most one attempt)", held)
	}
	r := res.Record
	if r == nil || r.Digest == "" || r.Pinned == "" || r.Steps[migrate.StepBundle] != migrate.StateDone || len(r.Next) != 2 ||
		!strings.Contains(r.Next[1], "kubectl assisted migrate --to=reg.example.com/a/b:v1 '--target-db=<redacted>'") || strings.Contains(r.LastError, "c0-secret") {
		t.Fatalf("record %+v", r)
	}
	// The exact command is in the record file only (0600), never in the journal.
	if !strings.Contains(strings.Join(r.FinishCommand, " "), "c0-secret") {
		t.Fatalf("the record's finish command lost the target: %v", r.FinishCommand)
	}
	for _, line := range w.lines {
		if strings.Contains(line, "c0-secret") {
			t.Fatalf("a secret in the journal: %s", line)
		}
	}
	data, err := os.ReadFile(res.RecordFile)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk Record
	if err := json.Unmarshal(data, &onDisk); err != nil || onDisk.Kind != RecordKind || onDisk.Digest != r.Digest {
		t.Fatalf("record file: %v\n%s", err, data)
	}
	if fi, _ := os.Stat(res.RecordFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file mode %v", fi.Mode())
	}
	if len(w.onCluster) != 1 || w.onCluster[0].Digest != r.Digest {
		t.Fatalf("record on cluster 0: %v", w.onCluster)
	}
}

// TestHold_KeepsHoldingWhileTheBundleIsNotInTheRegistry: past the timeout
// the reboot still waits for the push, until the hard limit.
func TestHold_KeepsHoldingWhileTheBundleIsNotInTheRegistry(t *testing.T) {
	w := newHoldWorld(t, ModeAuto)
	o := w.options(func(context.Context) error { return errors.New("registry: connection refused") })
	start := w.now
	o.Push = func(context.Context) error {
		w.pushes++
		if w.now.Sub(start) > 3*time.Minute {
			w.push()
			return nil
		}
		return errors.New("registry: connection refused")
	}
	res, err := Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomePushed || res.Held <= 3*time.Minute || res.Held > 5*time.Minute {
		t.Fatalf("%+v %v", res, err)
	}

	// The registry never comes back: the reboot goes on at the hard limit,
	// and the record says the state is lost.
	w = newHoldWorld(t, ModeAuto)
	o = w.options(func(context.Context) error { return errors.New("registry: connection refused") })
	o.Push = func(context.Context) error { return errors.New("registry: connection refused") }
	res, err = Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomeNotPushed || res.Held < 4*time.Minute+30*time.Second || res.Held > 5*time.Minute {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Record.Digest != "" || !strings.Contains(res.Record.Summary(), "node 0's state is lost") {
		t.Fatalf("record %+v", res.Record)
	}
}

func TestHold_DoesNotRetryWhatCannotSucceed(t *testing.T) {
	w := newHoldWorld(t, ModeAuto)
	bad := errors.New("usage: --target-db and --target-data-dir go together")
	o := w.options(func(context.Context) error { return bad })
	o.Retriable = func(err error) bool { return !errors.Is(err, bad) }
	res, err := Hold(context.Background(), o)
	if err != nil || res.Attempts != 1 || res.Outcome != OutcomeNotPushed || !strings.Contains(res.Record.LastError, "go together") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestHold_ManualWaitsForTheReceiptOfTheMigratedBundle(t *testing.T) {
	w := newHoldWorld(t, ModeManual)
	o := w.options(nil)
	polls := 0
	o.Sleep = func(_ context.Context, d time.Duration) {
		w.now = w.now.Add(d)
		polls++
		if polls == 3 {
			w.push() // the user's migrate pushed now
		}
	}
	var waited []string
	o.WaitReceipt = func(_ context.Context, digest string) error {
		waited = append(waited, digest)
		if len(waited) < 2 {
			w.now = w.now.Add(10 * time.Second)
			return errors.New("no receipt yet")
		}
		return nil
	}
	res, err := Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomeMigrated || len(waited) != 2 || waited[0] != "sha256:"+strings.Repeat("d", 64) {
		t.Fatalf("%+v %v %v", res, err, waited)
	}

	// Nothing ever migrated: the record says so after the timeout.
	w = newHoldWorld(t, ModeManual)
	o = w.options(nil)
	o.WaitReceipt = func(context.Context, string) error { t.Fatal("waited for a receipt of no bundle"); return nil }
	res, err = Hold(context.Background(), o)
	if err != nil || res.Outcome != OutcomeNotPushed || res.Held < 2*time.Minute {
		t.Fatalf("%+v %v", res, err)
	}
}
