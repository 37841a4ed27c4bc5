package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Phase is one idempotent step of a restore.
type Phase struct {
	Name string
	// Run does the work. It must converge when run again after being killed at
	// any point, including after it finished but before it was recorded.
	Run func(ctx context.Context) (Counts, error)
	// Verify, when set, re-checks a phase the journal says is done (the
	// database still holds the rows, the files are still there); an error makes
	// the phase run again.
	Verify func(ctx context.Context) error
}

// Outcome is what Run did with one phase.
type Outcome struct {
	Phase string `json:"phase"`
	// Ran is false for a phase skipped because the journal had it done.
	Ran bool `json:"ran"`
	// Rechecked is why a phase recorded as done ran again ("" otherwise).
	Rechecked string    `json:"rechecked,omitempty"`
	Counts    Counts    `json:"counts,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	Duration  string    `json:"duration"`
}

// RunOptions tune Run.
type RunOptions struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Run runs phases in order, skipping the ones the journal records as done
// (after their Verify passes), and records each as it starts and ends. It
// stops at the first error, leaving that phase recorded as running.
func Run(ctx context.Context, j *Journal, phases []Phase, o RunOptions) ([]Outcome, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	now := o.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	seen := map[string]bool{}
	for _, p := range phases {
		if p.Name == "" || p.Run == nil || seen[p.Name] {
			return nil, fmt.Errorf("phase %q: phases need a unique name and a Run function", p.Name)
		}
		seen[p.Name] = true
	}
	var out []Outcome
	for _, p := range phases {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		rec, _ := j.Record(p.Name)
		oc := Outcome{Phase: p.Name}
		if rec.State == StateDone {
			recheck := ""
			if p.Verify != nil {
				if err := p.Verify(ctx); err != nil {
					recheck = err.Error()
				}
			}
			if recheck == "" {
				oc.Counts, oc.StartedAt, oc.Duration = rec.Counts, rec.StartedAt, rec.FinishedAt.Sub(rec.StartedAt).String()
				log.Info("phase already done", "phase", p.Name)
				out = append(out, oc)
				continue
			}
			oc.Rechecked = recheck
			log.Info("phase recorded as done failed its re-check; running it again", "phase", p.Name)
		}
		started := now()
		if err := j.Put(ctx, p.Name, Record{State: StateRunning, StartedAt: started}); err != nil {
			return out, err
		}
		log.Info("phase started", "phase", p.Name)
		counts, err := p.Run(ctx)
		if err != nil {
			// Tell `wait-for` the restore failed, unless we were stopped: a
			// cancelled or killed restore is resumable, not failed.
			if ctx.Err() == nil {
				rec := Record{State: StateFailed, StartedAt: started, FinishedAt: now(), Error: err.Error()}
				if perr := j.Put(ctx, p.Name, rec); perr != nil {
					log.Warn("could not record the failure in the journal", "phase", p.Name, "error", perr)
				}
			}
			return out, &PhaseError{Phase: p.Name, Err: err}
		}
		finished := now()
		if err := j.Put(ctx, p.Name, Record{State: StateDone, StartedAt: started, FinishedAt: finished, Counts: counts}); err != nil {
			return out, err
		}
		log.Info("phase done", "phase", p.Name, "duration", finished.Sub(started).String())
		oc.Ran, oc.Counts, oc.StartedAt, oc.Duration = true, counts, started, finished.Sub(started).String()
		out = append(out, oc)
	}
	return out, nil
}

// PhaseError is a phase's failure.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return fmt.Sprintf("restore phase %s: %v", e.Phase, e.Err) }
func (e *PhaseError) Unwrap() error { return e.Err }

// AllDone reports whether every phase is recorded as done.
func (j *Journal) AllDone(phases []Phase) bool {
	for _, p := range phases {
		if !j.Done(p.Name) {
			return false
		}
	}
	return true
}

var errNotDone = errors.New("not every phase is done")
