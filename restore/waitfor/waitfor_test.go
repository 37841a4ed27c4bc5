package waitfor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
)

const (
	digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	other  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	ns     = "multicluster-engine"
)

func phases(names ...string) []journal.Phase {
	var ps []journal.Phase
	for _, n := range names {
		ps = append(ps, journal.Phase{Name: n, Run: func(context.Context) (journal.Counts, error) { return journal.Counts{"n": 1}, nil }})
	}
	return ps
}

func complete(t *testing.T, cs *fake.Clientset, d string, names ...string) {
	t.Helper()
	if err := restoreAll(cs, d, names...); err != nil {
		t.Fatal(err)
	}
}

// restoreAll journals and completes a restore with the named phases.
func restoreAll(cs *fake.Clientset, d string, names ...string) error {
	ctx := context.Background()
	j, err := journal.Open(ctx, cs, ns, d, "")
	if err != nil {
		return err
	}
	ps := phases(names...)
	if _, err := journal.Run(ctx, j, ps, journal.RunOptions{}); err != nil {
		return err
	}
	r, err := j.Receipt(ps, time.Now())
	if err != nil {
		return err
	}
	return journal.WriteReceipt(ctx, cs, ns, r)
}

func quick(t *testing.T) (context.Context, Options) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	t.Cleanup(cancel)
	return ctx, Options{Interval: 10 * time.Millisecond}
}

func TestWait(t *testing.T) {
	t.Run("receipt of this bundle", func(t *testing.T) {
		cs := fake.NewSimpleClientset()
		complete(t, cs, digest, "database", "files", "auth", "resources")
		ctx, o := quick(t)
		rec, err := Wait(ctx, cs, ns, digest, o)
		if err != nil || rec.BundleDigest != digest {
			t.Fatalf("Wait() = %+v, %v", rec, err)
		}
	})
	t.Run("nothing yet times out", func(t *testing.T) {
		ctx, o := quick(t)
		_, err := Wait(ctx, fake.NewSimpleClientset(), ns, digest, o)
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("Wait() error = %v", err)
		}
	})
	t.Run("receipt for another bundle", func(t *testing.T) {
		cs := fake.NewSimpleClientset()
		complete(t, cs, other, "database", "files")
		ctx, o := quick(t)
		_, err := Wait(ctx, cs, ns, digest, o)
		var ob *OtherBundleError
		if !errors.As(err, &ob) || ob.Found[0] != other {
			t.Fatalf("Wait() error = %v, want OtherBundleError", err)
		}
	})
	t.Run("failed restore", func(t *testing.T) {
		cs := fake.NewSimpleClientset()
		ctx := context.Background()
		j, _ := journal.Open(ctx, cs, ns, digest, "")
		boom := []journal.Phase{{Name: "database", Run: func(context.Context) (journal.Counts, error) {
			return nil, errors.New("target database is not empty")
		}}}
		_, _ = journal.Run(ctx, j, boom, journal.RunOptions{})
		wctx, o := quick(t)
		_, err := Wait(wctx, cs, ns, digest, o)
		var f *RestoreFailedError
		if !errors.As(err, &f) || f.Phase != "database" || !strings.Contains(f.Reason, "not empty") {
			t.Fatalf("Wait() error = %v, want RestoreFailedError", err)
		}
	})
	t.Run("receipt without files", func(t *testing.T) {
		cs := fake.NewSimpleClientset()
		complete(t, cs, digest, "database", "resources")
		ctx, o := quick(t)
		_, err := Wait(ctx, cs, ns, digest, o)
		var inc *IncompleteReceiptError
		if !errors.As(err, &inc) || inc.Missing[0] != "files" {
			t.Fatalf("Wait() error = %v, want IncompleteReceiptError", err)
		}
	})
	t.Run("running restore then receipt", func(t *testing.T) {
		cs := fake.NewSimpleClientset()
		ctx := context.Background()
		j, _ := journal.Open(ctx, cs, ns, digest, "")
		_ = j.Put(ctx, "database", journal.Record{State: journal.StateRunning, StartedAt: time.Now()})
		done := make(chan error, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			done <- restoreAll(cs, digest, "database", "files")
		}()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var saw []string
		rec, err := Wait(wctx, cs, ns, digest, Options{Interval: 5 * time.Millisecond, OnStatus: func(s Status) { saw = append(saw, s.State) }})
		if err != nil || rec == nil {
			t.Fatalf("Wait() = %v, %v", rec, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(saw) == 0 || saw[0] != "running" {
			t.Fatalf("statuses = %v, want running first", saw)
		}
	})
}
