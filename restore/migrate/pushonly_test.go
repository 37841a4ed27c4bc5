package migrate

import (
	"context"
	"errors"
	"testing"
)

// TestPushOnly_WithoutClusterThenRunReusesIt: with cluster 0 unreachable the
// bundle still gets to the registry; a later Run (cluster 0 back) reuses it
// and does not bundle again.
func TestPushOnly_WithoutClusterThenRunReusesIt(t *testing.T) {
	w := newWorld(t, true)
	w.cluster.unreachable = errors.New("connection refused")
	if _, err := Run(context.Background(), w.o); err == nil {
		t.Fatal("Run with cluster 0 unreachable succeeded")
	}
	if len(w.bundles.created) != 0 {
		t.Fatalf("Run bundled although its preflight failed")
	}
	res, err := PushOnly(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest == "" || len(w.bundles.created) != 1 || len(res.Steps) != 1 || res.Steps[0].Name != StepBundle || !res.Steps[0].Ran {
		t.Fatalf("PushOnly: %+v, %d bundles", res, len(w.bundles.created))
	}
	st, err := LoadState(w.o.StateDir, w.o.Ref.String(), w.o.Target, w.o.Namespace)
	if err != nil || !st.Done(StepBundle) || st.Digest != res.Digest || st.Done(StepPreflight) {
		t.Fatalf("state after PushOnly: %+v %v", st, err)
	}
	w.cluster.unreachable = nil
	w.bundles.exists = map[string]bool{st.Pinned: true}
	run, err := Run(context.Background(), w.o)
	if err != nil {
		t.Fatal(err)
	}
	if run.Digest != res.Digest || len(w.bundles.created) != 1 || run.Steps[1].Ran {
		t.Fatalf("Run after PushOnly bundled again: %s then %s, %d bundles", res.Digest, run.Digest, len(w.bundles.created))
	}
}

// TestPushOnly_RefusesWhileTheServiceWrites: other sessions on node 0's
// database stop PushOnly as they stop the preflight.
func TestPushOnly_RefusesWhileTheServiceWrites(t *testing.T) {
	w := newWorld(t, true)
	w.db.sessions, w.db.who = 1, "assisted-service@127.0.0.1"
	_, err := PushOnly(context.Background(), w.o)
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepBundle || Hint(err) == "" || len(w.bundles.created) != 0 {
		t.Fatalf("%v (%d bundles)", err, len(w.bundles.created))
	}
	w.o.Live = true
	if _, err := PushOnly(context.Background(), w.o); err != nil || len(w.bundles.created) != 1 {
		t.Fatalf("--live: %v (%d bundles)", err, len(w.bundles.created))
	}
}
