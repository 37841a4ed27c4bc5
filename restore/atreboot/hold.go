package atreboot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// recordGrace is kept of the hard limit for what follows the last attempt:
// an attempt may overrun its deadline by a client's own timeout (10 s), the
// registry check (10 s) and the record on cluster 0 (10 s).
const recordGrace = 45 * time.Second

// HoldOptions configure Hold: the spec, and the migration's operations as
// the plugin builds them from the spec's arguments.
type HoldOptions struct {
	Spec *Spec
	// Attempt runs the whole migration once (migrate.Run); auto mode.
	Attempt func(ctx context.Context) error
	// Push runs only the bundle step (migrate.PushOnly), for when an
	// attempt failed before pushing (cluster 0 unreachable); auto mode.
	Push func(ctx context.Context) error
	// Retriable says whether a failed attempt may succeed when tried again.
	Retriable func(error) bool
	// State reads the migration's state.
	State func() (*migrate.State, error)
	// InRegistry checks that the state's bundle is in the registry, signed
	// by the run's key.
	InRegistry func(ctx context.Context, st *migrate.State) error
	// WaitReceipt waits until cluster 0 holds the receipt of digest or ctx
	// ends; manual mode.
	WaitReceipt func(ctx context.Context, digest string) error
	// RecordOnCluster writes the record ConfigMap (nil: no cluster 0).
	RecordOnCluster func(ctx context.Context, r *Record) error
	// FinishCommand is the migrate command of the record file; RedactArgs
	// hides what it may hold of secrets (a database URL's password) where the
	// command is shown: the journal, the record's Next, cluster 0.
	FinishCommand []string
	RedactArgs    func([]string) []string
	// Redact removes secrets from an error's text.
	Redact func(string) string
	// Log goes to the journal (the unit's output).
	Log      func(format string, args ...any)
	Hostname string
	Now      func() time.Time
	// Sleep waits d or until ctx ends (default: a timer).
	Sleep func(ctx context.Context, d time.Duration)
}

// HoldResult is how the hold ended.
type HoldResult struct {
	Outcome  Outcome
	Attempts int
	Held     time.Duration
	// Record is set when the migration did not complete; RecordFile is its
	// path on node 0 and RecordErr why it is not on cluster 0.
	Record     *Record
	RecordFile string
	RecordErr  error
}

func (o *HoldOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Retriable == nil {
		o.Retriable = func(error) bool { return true }
	}
	if o.RedactArgs == nil {
		o.RedactArgs = func(a []string) []string { return a }
	}
}

// pushed reports whether the state records a pushed bundle.
func pushed(st *migrate.State) bool {
	return st != nil && st.Digest != "" && st.Done(migrate.StepBundle)
}

// Hold runs at node 0's reboot, from the hold unit's ExecStop. Auto mode:
// it runs the migration, and again after each failure, until it completes
// or Spec.Timeout has passed; past that, only while the bundle is not yet in
// the registry, until Spec.HardLimit. Manual mode: it waits for the receipt
// of the bundle the migration's state names, until Spec.Timeout. When the
// migration did not complete it writes the record (journal, state
// directory, cluster 0) and returns: the reboot goes on.
func Hold(ctx context.Context, o HoldOptions) (*HoldResult, error) {
	o.defaults()
	s := o.Spec
	start := o.Now()
	soft := start.Add(s.Timeout.D())
	hard := start.Add(s.HardLimit.D() - recordGrace)
	if hard.Before(soft) {
		hard = soft
	}
	res := &HoldResult{}
	var lastErr error
	if s.Mode == ModeManual {
		lastErr = holdManual(ctx, &o, res, soft)
	} else {
		lastErr = holdAuto(ctx, &o, res, soft, hard)
	}
	res.Held = o.Now().Sub(start)
	if res.Outcome == OutcomeMigrated {
		return res, nil
	}
	st, serr := o.State()
	if serr != nil {
		lastErr = errors.Join(lastErr, serr)
	}
	res.Outcome = OutcomeNotPushed
	if pushed(st) {
		// Checked again here: the bundle must be in the registry now, not
		// only recorded as pushed once.
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := o.InRegistry(ictx, st)
		cancel()
		if err == nil {
			res.Outcome = OutcomePushed
		} else {
			lastErr = errors.Join(lastErr, fmt.Errorf("the pushed bundle %s: %w", st.Pinned, err))
		}
	}
	rec := o.record(res, st, lastErr)
	res.Record = rec
	for _, line := range splitLines(rec.Summary()) {
		o.Log("%s", line)
	}
	if st != nil && st.Dir() != "" {
		p, err := WriteRecordFile(st.Dir(), rec)
		if err != nil {
			o.Log("could not write the record on node 0: %v", err)
		} else {
			res.RecordFile = p
			o.Log("record: %s", p)
		}
	}
	if o.RecordOnCluster != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res.RecordErr = o.RecordOnCluster(cctx, rec)
		cancel()
		if res.RecordErr != nil {
			o.Log("could not write the record on cluster 0 (ConfigMap %s/%s): %s", s.Namespace, RecordConfigMap, o.Redact(res.RecordErr.Error()))
		} else {
			o.Log("record on cluster 0: ConfigMap %s/%s", s.Namespace, RecordConfigMap)
		}
	}
	return res, nil
}

func holdAuto(ctx context.Context, o *HoldOptions, res *HoldResult, soft, hard time.Time) error {
	backoff := 5 * time.Second
	var lastErr error
	for {
		deadline := soft
		if !o.Now().Before(soft) {
			deadline = hard
		}
		res.Attempts++
		o.Log("attempt %d: migrating node 0 to cluster 0 (until %s)", res.Attempts, deadline.UTC().Format(time.TimeOnly))
		actx, cancel := context.WithDeadline(ctx, deadline)
		err := o.Attempt(actx)
		if err == nil {
			cancel()
			res.Outcome = OutcomeMigrated
			return nil
		}
		lastErr = err
		o.Log("attempt %d failed: %s", res.Attempts, o.Redact(err.Error()))
		st, _ := o.State()
		if !pushed(st) && o.Push != nil && actx.Err() == nil {
			// The bundle goes to the registry even when a later step cannot
			// run: then the reboot can go on without losing node 0's state.
			o.Log("pushing the bundle on its own")
			if perr := o.Push(actx); perr != nil {
				o.Log("push failed: %s", o.Redact(perr.Error()))
			} else {
				st, _ = o.State()
			}
		}
		cancel()
		if ctx.Err() != nil {
			return errors.Join(lastErr, ctx.Err())
		}
		now := o.Now()
		if !o.Retriable(err) {
			o.Log("not retried: this failure does not go away by itself")
			return lastErr
		}
		if !now.Before(soft) {
			if pushed(st) {
				return lastErr
			}
			if !now.Before(hard) {
				return lastErr
			}
			o.Log("the bundle is not in the registry yet: the reboot keeps waiting (until %s)", hard.UTC().Format(time.TimeOnly))
		}
		wait := backoff
		if d := deadlineAfter(now, soft, hard).Sub(now); d < wait {
			wait = d
		}
		if wait > 0 {
			o.Sleep(ctx, wait)
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// deadlineAfter is the deadline that applies at now.
func deadlineAfter(now, soft, hard time.Time) time.Time {
	if now.Before(soft) {
		return soft
	}
	return hard
}

func holdManual(ctx context.Context, o *HoldOptions, res *HoldResult, soft time.Time) error {
	var lastErr error
	announced := ""
	for {
		st, err := o.State()
		if err != nil {
			lastErr = err
		}
		if pushed(st) {
			if announced != st.Digest {
				o.Log("waiting for the receipt of %s on cluster 0", st.Digest)
				announced = st.Digest
			}
			res.Attempts++
			wctx, cancel := context.WithDeadline(ctx, soft)
			err := o.WaitReceipt(wctx, st.Digest)
			cancel()
			if err == nil {
				res.Outcome = OutcomeMigrated
				return nil
			}
			lastErr = err
			if o.Now().Before(soft) {
				o.Log("%s", o.Redact(err.Error()))
			}
		} else if announced == "" {
			o.Log("no bundle pushed by this migration yet (state %s): waiting for one", o.Spec.StateDir)
			announced = "-"
		}
		if ctx.Err() != nil {
			return errors.Join(lastErr, ctx.Err())
		}
		now := o.Now()
		if !now.Before(soft) {
			if lastErr == nil {
				lastErr = fmt.Errorf("no receipt on cluster 0 within %s", o.Spec.Timeout.D())
			}
			return lastErr
		}
		o.Sleep(ctx, min(5*time.Second, soft.Sub(now)))
	}
}

func (o *HoldOptions) record(res *HoldResult, st *migrate.State, lastErr error) *Record {
	s := o.Spec
	r := &Record{APIVersion: RecordAPIVersion, Kind: RecordKind, Outcome: res.Outcome, Mode: s.Mode, Node: o.Hostname,
		Time: o.Now().UTC().Truncate(time.Second), HeldSeconds: res.Held.Round(time.Second).Seconds(), Attempts: res.Attempts,
		Reference: s.Ref, Namespace: s.Namespace, Target: s.Target, StateDir: s.StateDir, FinishCommand: o.FinishCommand}
	if lastErr != nil {
		r.LastError = o.Redact(lastErr.Error())
	}
	if st != nil {
		r.RunDir = st.Dir()
		r.Steps = map[string]string{}
		for name, step := range st.Steps {
			r.Steps[name] = step.State
		}
		if pushed(st) {
			r.Digest, r.Pinned = st.Digest, st.Pinned
		}
	}
	switch res.Outcome {
	case OutcomePushed:
		r.Next = []string{
			fmt.Sprintf("Copy the migration's state directory %s from node 0 before it is gone (on a live ISO it is in memory): %s in it holds the key that decrypts the bundle and the key that signed it.", r.StateDir, r.RunDir),
			"From any machine that reaches cluster 0 and the registry, with that copy as --state-dir, finish the migration (it reuses the pushed bundle and continues at the step that failed; the exact command is finishCommand in the record file): " + shellJoin(o.RedactArgs(r.FinishCommand)),
		}
	case OutcomeNotPushed:
		r.Next = []string{
			"Node 0's assisted-service state did not leave node 0: cluster 0's assisted-service will start without it.",
			"If node 0 has not rebooted yet, run the migration by hand: kubectl assisted migrate with the flags given to --at-reboot.",
		}
	}
	return r
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	out := make([]byte, 0, 256)
	for i, a := range args {
		if i > 0 {
			out = append(out, ' ')
		}
		if a != "" && isShellSafe(a) {
			out = append(out, a...)
			continue
		}
		out = append(out, '\'')
		for j := 0; j < len(a); j++ {
			if a[j] == '\'' {
				out = append(out, `'\''`...)
			} else {
				out = append(out, a[j])
			}
		}
		out = append(out, '\'')
	}
	return string(out)
}

func isShellSafe(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == '@' || r == ',' || r == '+') {
			return false
		}
	}
	return true
}
