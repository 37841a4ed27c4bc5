// Package waitfor blocks until cluster 0 holds the receipt of a bundle's
// restore: what node 0 runs before it may reboot (`kubectl assisted wait-for
// restore-complete`). It fails fast when the restore failed or when cluster 0
// was restored from another bundle, and otherwise keeps polling through API
// errors (cluster 0's API may come and go while it installs) until the timeout.
package waitfor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
)

// RequiredPhases must all be in a receipt for it to count: a restore that
// skipped the database or the files did not carry node 0's state.
var RequiredPhases = []string{"database", "files"}

// Status is what the latest poll saw, for progress output.
type Status struct {
	// Phase is the phase in progress or last done ("" before any).
	Phase string
	// State is "waiting" (no journal yet), "running" or "done".
	State string
	// Err is the last transient error (API unreachable, ...), if any.
	Err error
}

// Options tune Wait.
type Options struct {
	// Interval between polls (2s when zero).
	Interval time.Duration
	// OnStatus is told what each poll saw.
	OnStatus func(Status)
}

// ErrTimeout means the receipt did not appear before ctx ended.
var ErrTimeout = errors.New("timed out")

// RestoreFailedError means the restore recorded a failed phase.
type RestoreFailedError struct {
	Phase  string
	Reason string
}

func (e *RestoreFailedError) Error() string {
	return fmt.Sprintf("the restore failed in phase %s: %s", e.Phase, e.Reason)
}

// OtherBundleError means cluster 0 completed a restore from another bundle and
// no restore of the awaited one exists.
type OtherBundleError struct {
	Want  string
	Found []string
}

func (e *OtherBundleError) Error() string {
	return fmt.Sprintf("cluster 0 was restored from bundle %v, not %s", e.Found, e.Want)
}

// IncompleteReceiptError means the receipt lacks a required phase.
type IncompleteReceiptError struct {
	Missing []string
}

func (e *IncompleteReceiptError) Error() string {
	return fmt.Sprintf("the receipt lacks the phases %v: the restore did not carry all of node 0's state", e.Missing)
}

// Wait polls namespace ns of cluster 0 until the receipt of digest exists and
// names every required phase. ctx bounds the wait (the timeout).
func Wait(ctx context.Context, c kubernetes.Interface, ns, digest string, o Options) (*journal.Receipt, error) {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	var (
		last error
		st   Status
		rec  *journal.Receipt
	)
	err := wait.PollUntilContextCancel(ctx, o.Interval, true, func(ctx context.Context) (bool, error) {
		var err error
		st, rec, err = poll(ctx, c, ns, digest)
		if rec != nil || isFinal(err) {
			return true, err
		}
		if err != nil && ctx.Err() == nil {
			last = err
			st.Err = err
		}
		if o.OnStatus != nil {
			o.OnStatus(st)
		}
		return false, nil
	})
	if rec != nil || isFinal(err) {
		return rec, err
	}
	if last != nil {
		return nil, fmt.Errorf("%w waiting for the restore of %s (last error: %v)", ErrTimeout, digest, last)
	}
	return nil, fmt.Errorf("%w waiting for the restore of %s (last seen: %s %s)", ErrTimeout, digest, st.State, st.Phase)
}

func isFinal(err error) bool {
	var f *RestoreFailedError
	var ob *OtherBundleError
	var inc *IncompleteReceiptError
	return errors.As(err, &f) || errors.As(err, &ob) || errors.As(err, &inc)
}

func poll(ctx context.Context, c kubernetes.Interface, ns, digest string) (Status, *journal.Receipt, error) {
	rec, err := journal.ReadReceipt(ctx, c, ns, digest)
	if err == nil {
		var missing []string
		for _, p := range RequiredPhases {
			if !slices.Contains(rec.Phases, p) {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			return Status{State: "done"}, nil, &IncompleteReceiptError{Missing: missing}
		}
		return Status{State: "done"}, &rec, nil
	}
	if !errors.Is(err, journal.ErrNoReceipt) {
		return Status{State: "waiting"}, nil, err
	}
	j, err := journal.Peek(ctx, c, ns, digest)
	if errors.Is(err, journal.ErrNoJournal) {
		others, lerr := journal.ReceiptDigests(ctx, c, ns)
		if lerr != nil {
			return Status{State: "waiting"}, nil, lerr
		}
		// Our own receipt may have appeared since the first read: the next poll
		// reads it; only receipts of other bundles with none of ours are final.
		if len(others) > 0 && !slices.Contains(others, digest) {
			return Status{State: "waiting"}, nil, &OtherBundleError{Want: digest, Found: others}
		}
		return Status{State: "waiting"}, nil, nil
	}
	if err != nil {
		return Status{State: "waiting"}, nil, err
	}
	if phase, r, failed := j.Failed(); failed {
		return Status{Phase: phase, State: "failed"}, nil, &RestoreFailedError{Phase: phase, Reason: r.Error}
	}
	st := Status{State: "running"}
	var latest time.Time
	for name, r := range j.Phases() {
		if r.StartedAt.After(latest) {
			latest, st.Phase = r.StartedAt, name
		}
	}
	return st, nil, nil
}
