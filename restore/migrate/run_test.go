package migrate

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestRun_AllStepsThenRerunSkipsThem(t *testing.T) {
	w := newWorld(t, true)
	res, err := Run(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 6 || res.RestoreMode != "direct" || res.Digest == "" || res.ServiceURL != w.o.ServiceURL {
		t.Fatalf("result %+v", res)
	}
	for i, st := range res.Steps {
		if st.Name != Steps[i] || st.State != StateDone || !st.Ran {
			t.Errorf("step %d: %+v", i+1, st)
		}
	}
	if res.IdentityFile == "" || !strings.HasPrefix(res.SignerFile, w.o.StateDir) || !strings.HasPrefix(res.Signer, "sha256:") {
		t.Fatalf("keys in the result: %q %q %q", res.IdentityFile, res.SignerFile, res.Signer)
	}
	var lines []string
	for _, e := range w.events {
		switch e.Type {
		case EventStepStart:
			lines = append(lines, fmt.Sprintf("[%d/%d] %s ...", e.Number, e.Total, e.Step))
		case EventStepDone:
			lines = append(lines, fmt.Sprintf("[%d/%d] %s: %s", e.Number, e.Total, e.Step, e.State))
		}
	}
	if len(lines) != 12 || lines[0] != "[1/6] preflight ..." || lines[11] != "[6/6] switchover: done" {
		t.Fatalf("step events %v", lines)
	}

	w.events = nil
	again, err := Run(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != res.Digest || len(w.bundles.created) != 1 || w.restorer.got == nil {
		t.Fatalf("the rerun made a new bundle: %s then %s (%d created)", res.Digest, again.Digest, len(w.bundles.created))
	}
	if !again.Steps[0].Ran {
		t.Error("the rerun must repeat the preflight")
	}
	for _, st := range again.Steps[1:] {
		if st.Ran || st.State != StateDone {
			t.Errorf("rerun: step %+v ran again", st)
		}
	}
	skipped := 0
	for _, e := range w.events {
		if e.Type == EventStepSkipped {
			skipped++
		}
	}
	if skipped != 5 {
		t.Fatalf("%d already-done events, want 5", skipped)
	}
}

// TestRun_FailureStopsAndResumes: a failing step is reported with its
// number, recorded (without the connection strings) and retried by the next
// run, which does not repeat the steps before it.
func TestRun_FailureStopsAndResumes(t *testing.T) {
	w := newWorld(t, true)
	w.restorer.err = errors.New("cannot reach " + targetDSN)
	_, err := Run(context.Background(), w.o)
	var se *StepError
	if !errors.As(err, &se) || se.Number != 3 || se.Step != StepRestore || !strings.HasPrefix(err.Error(), "step 3/6 restore: ") {
		t.Fatalf("want step 3 restore, got %v", err)
	}
	st, err := LoadState(w.o.StateDir, w.o.Ref.String(), w.o.Target, w.o.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if rec := st.Steps[StepRestore]; rec == nil || rec.State != StateFailed || strings.Contains(rec.Detail, "c0-secret") || !strings.Contains(rec.Detail, "cannot reach") {
		t.Fatalf("recorded failure %+v", rec)
	}
	data, _ := os.ReadFile(filepath.Join(st.Dir(), "state.json"))
	if strings.Contains(string(data), "secret") || strings.Contains(string(data), "AGE-SECRET-KEY") {
		t.Fatalf("the state file holds a secret:\n%s", data)
	}
	w.restorer.err = nil
	res, err := Run(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps[1].Ran || !res.Steps[2].Ran || len(w.bundles.created) != 1 {
		t.Fatalf("resume: bundle ran %v, restore ran %v, %d bundles", res.Steps[1].Ran, res.Steps[2].Ran, len(w.bundles.created))
	}
}

func TestRun_PreflightFailureIsStep1(t *testing.T) {
	w := newWorld(t, true)
	w.db.sessions = 1
	_, err := Run(context.Background(), w.o)
	var se *StepError
	if !errors.As(err, &se) || se.Number != 1 || Hint(err) == "" || len(w.bundles.created) != 0 {
		t.Fatalf("%v (%d bundles)", err, len(w.bundles.created))
	}
}

func TestRun_CancelledContext(t *testing.T) {
	w := newWorld(t, false)
	w.cluster.receipt = nil
	w.o.Timeout = 0 // default 60m: only the cancellation ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	w.o.OnEvent = func(e Event) {
		if e.Type == EventStepStart && e.Step == StepWait {
			cancel()
		}
	}
	_, err := Run(ctx, w.o)
	var se *StepError
	if !errors.As(err, &se) || se.Number != 4 || !errors.Is(err, context.Canceled) {
		t.Fatalf("want step 4 cancelled, got %v", err)
	}
}

func TestDryRun_WritesNothing(t *testing.T) {
	w := newWorld(t, false)
	one := int32(1)
	w.cluster.hasService, w.cluster.replicas = true, &one
	w.o.Force = true
	if _, err := DryRun(context.Background(), w.o); err == nil || w.cluster.scaled {
		t.Fatalf("a dry run never scales, even with Force: %v scaled=%v", err, w.cluster.scaled)
	}
	w.cluster.hasService = false
	plan, err := DryRun(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if plan.RestoreMode != "job" || len(plan.Steps) != 6 || !strings.Contains(plan.Steps[2], "PVCs 10Gi and 100Gi") {
		t.Fatalf("plan %+v", plan)
	}
	if entries, _ := os.ReadDir(w.o.StateDir); len(entries) != 0 || len(w.bundles.created) != 0 || len(w.cluster.applied) != 0 {
		t.Fatalf("the dry run wrote: state %v, %d bundles, %d objects", entries, len(w.bundles.created), len(w.cluster.applied))
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, change := range map[string]func(*Options){
		"target db alone":       func(o *Options) { o.TargetDataDir = "" },
		"digest":                func(o *Options) { o.Ref.Digest = digest.Digest("sha256:" + strings.Repeat("0", 64)) },
		"plaintext to registry": func(o *Options) { o.NoEncryption = true },
		"nothing":               func(o *Options) { o.Create.Database, o.Create.Files = nil, nil },
		"no namespace":          func(o *Options) { o.Namespace = "" },
		"job without ASC":       func(o *Options) { o.TargetDB, o.TargetDataDir, o.AgentServiceConfig = "", "", nil },
	} {
		w := newWorld(t, true)
		change(&w.o)
		_, err := Run(context.Background(), w.o)
		var oe *OptionsError
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an OptionsError", name, err)
		}
	}
}

func TestStateRoundTripAndReset(t *testing.T) {
	root := t.TempDir()
	s, err := LoadState(root, "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.EnsureIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.IdentityPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity file mode: %v %v", fi, err)
	}
	for _, step := range Steps {
		s.Steps[step] = &StepState{State: StateDone}
	}
	s.Digest = "sha256:abc"
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := LoadState(root, "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != "sha256:abc" || !again.Done(StepSwitchover) {
		t.Fatalf("state not kept: %+v", again)
	}
	id2, err := again.EnsureIdentity()
	if err != nil || id2.String() != id.String() {
		t.Fatalf("identity not reused: %v", err)
	}
	again.ResetFrom(StepRestore)
	if !again.Done(StepBundle) || again.Done(StepRestore) || again.Done(StepSwitchover) {
		t.Fatalf("ResetFrom(restore) kept the wrong steps: %+v", again.Steps)
	}
	other, _ := LoadState(root, "reg:5000/a:v2", "https://c0:6443", "ns")
	if other.Digest != "" || other.Dir() == again.Dir() {
		t.Fatal("another reference must start another run")
	}
	if err := os.WriteFile(filepath.Join(again.Dir(), "state.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(root, "reg:5000/a:v1", "https://c0:6443", "ns"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged state file: %v", err)
	}
}

// The run's signing key pair: made once (private 0600), reused by a rerun,
// and its public half is what the restore trusts.
func TestStateSigningKey(t *testing.T) {
	s, err := LoadState(t.TempDir(), "reg:5000/a:v1", "https://c0:6443", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Signer(); err == nil {
		t.Fatal("a signer before any key was made")
	}
	k, err := s.EnsureSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.SigningKeyPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing key mode: %v %v", fi, err)
	}
	pub, pemText, err := s.Signer()
	if err != nil || !strings.Contains(pemText, "BEGIN PUBLIC KEY") {
		t.Fatalf("signer: %v %q", err, pemText)
	}
	payload := []byte("a manifest digest, say")
	sig, err := k.Sign(nil, payload, crypto.Hash(0))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(pub.Public.(ed25519.PublicKey), payload, sig) {
		t.Fatal("signing.pub is not the public half of signing.key")
	}
	k2, err := s.EnsureSigningKey()
	if err != nil || !k2.Public().(ed25519.PublicKey).Equal(k.Public()) {
		t.Fatalf("the rerun made another key: %v", err)
	}
	if err := os.WriteFile(s.SigningKeyPath(), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureSigningKey(); err == nil || strings.Contains(err.Error(), "garbage") {
		t.Fatalf("damaged key: %v", err)
	}
}

func TestParseAgentServiceConfig(t *testing.T) {
	a, err := ParseAgentServiceConfig([]byte(goodASC), "asc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.DatabaseSize.String() != "10Gi" || a.FilesystemSize.String() != "100Gi" || a.Source != "asc.yaml" {
		t.Fatalf("sizes %s %s", a.DatabaseSize.String(), a.FilesystemSize.String())
	}
	for name, body := range map[string]string{
		"other name": strings.Replace(goodASC, "name: agent", "name: other", 1),
		"no size":    strings.Replace(goodASC, "storage: 10Gi", "storage: ''", 1),
		"bad size":   strings.Replace(goodASC, "storage: 10Gi", "storage: ten", 1),
		"kind":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: agent}\n",
		"not yaml":   "{",
	} {
		if _, err := ParseAgentServiceConfig([]byte(body), name); err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
