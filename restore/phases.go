package restore

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// runPhases runs the journal's phases and writes the receipt. The database
// phase runs first and on its own: on a first run the journal is created only
// inside its transaction, once every check passed, so a refusal leaves no
// trace anywhere.
func (r *runner) runPhases(ctx context.Context) (err error) {
	var names []journal.Phase // every phase of the receipt, in order
	// The files are staged first: the database (and, with --replace, the
	// rows it held) is not touched before the new files are proven writable.
	if !r.o.SkipFiles && (r.j == nil || !r.j.Done(PhaseFiles)) {
		if err := r.stageFiles(ctx); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				r.dropStaged()
			}
		}()
	}
	if !r.o.SkipDatabase {
		oc, err := r.databasePhase(ctx)
		if oc != nil {
			r.res.Phases = append(r.res.Phases, *oc)
		}
		if err != nil {
			r.waitAnalyze()
			return err
		}
		names = append(names, journal.Phase{Name: PhaseDatabase})
	}
	if err := r.ensureJournal(ctx); err != nil {
		r.waitAnalyze()
		return err
	}
	var phases []journal.Phase
	if !r.o.SkipFiles {
		phases = append(phases, r.phase(PhaseFiles, r.restoreFiles, r.verifyFiles))
	}
	if r.cs != nil {
		phases = append(phases, r.phase(PhaseAuth, r.ensureAuth, func(ctx context.Context) error { _, err := r.ensureAuth(ctx); return err }))
	} else {
		r.warn("no cluster 0: the journal and receipt are kept in %s, and no postgres or local-auth Secret is created", r.jdb.Where())
	}
	if !r.o.SkipResources {
		phases = append(phases, r.phase(PhaseResources, r.applyResources, func(context.Context) error { return nil }))
	}
	outcomes, err := journal.Run(ctx, r.j, phases, journal.RunOptions{Logger: r.log, Now: r.now})
	r.res.Phases = append(r.res.Phases, outcomes...)
	r.waitAnalyze()
	if err != nil {
		return err
	}
	names = append(names, phases...)
	if !ranAny(r.res.Phases) {
		// Every phase was done by an earlier run: its receipt stands as it is,
		// so a rerun changes nothing.
		if rec, err := r.readReceipt(ctx); err == nil && samePhases(rec.Phases, names) {
			r.res.Receipt = &rec
			r.event(Event{Type: EventSkipped, Phase: "receipt", Message: "written by an earlier run"})
			return nil
		}
	}
	rec, err := r.j.Receipt(names, r.now())
	if err != nil {
		return fmt.Errorf("build the receipt: %w", err)
	}
	if err := r.writeReceipt(ctx, rec); err != nil {
		return err
	}
	r.res.Receipt = &rec
	r.event(Event{Type: EventDone, Phase: "receipt", Message: "receipt written: wait-for restore-complete --bundle " + r.res.Digest + " succeeds"})
	return nil
}

func (r *runner) readReceipt(ctx context.Context) (journal.Receipt, error) {
	if r.jdb != nil {
		return r.jdb.ReadReceipt(ctx, r.res.Digest)
	}
	return journal.ReadReceipt(ctx, r.cs, r.o.Namespace, r.res.Digest)
}

func (r *runner) writeReceipt(ctx context.Context, rec journal.Receipt) error {
	if r.jdb != nil {
		return r.jdb.WriteReceipt(ctx, rec)
	}
	return journal.WriteReceipt(ctx, r.cs, r.o.Namespace, rec)
}

// phase wraps a phase with its events: verify passing means the phase is
// skipped as done by an earlier run.
func (r *runner) phase(name string, run func(context.Context) (journal.Counts, error), verify func(context.Context) error) journal.Phase {
	return journal.Phase{
		Name: name,
		Run: func(ctx context.Context) (journal.Counts, error) {
			start := r.now()
			r.event(Event{Type: EventStart, Phase: name})
			counts, err := run(ctx)
			if err == nil {
				r.event(Event{Type: EventDone, Phase: name, Counts: counts, Duration: r.now().Sub(start)})
			}
			return counts, err
		},
		Verify: func(ctx context.Context) error {
			if err := verify(ctx); err != nil {
				return err
			}
			r.event(Event{Type: EventSkipped, Phase: name, Message: "done by an earlier run"})
			return nil
		},
	}
}

// databasePhase is journal.Run's loop for the one phase that may have to
// create the journal itself (see runPhases).
func (r *runner) databasePhase(ctx context.Context) (*journal.Outcome, error) {
	recheck := ""
	if r.j != nil && r.j.Done(PhaseDatabase) {
		rec, _ := r.j.Record(PhaseDatabase)
		err := r.verifyDatabase(ctx)
		if err == nil {
			r.event(Event{Type: EventSkipped, Phase: PhaseDatabase, Message: "done by an earlier run"})
			oc := &journal.Outcome{Phase: PhaseDatabase, Counts: rec.Counts, StartedAt: rec.StartedAt, Duration: rec.FinishedAt.Sub(rec.StartedAt).String()}
			if r.recreate && !r.o.SkipResources && !r.j.Done(PhaseResources) {
				if err := r.recreateFromTarget(ctx); err != nil {
					return oc, err
				}
			}
			return oc, nil
		}
		recheck = err.Error()
		r.warn("the database phase was recorded as done but its re-check failed (%s): loading it again", recheck)
	}
	started := r.now()
	r.event(Event{Type: EventStart, Phase: PhaseDatabase})
	if r.j != nil {
		if err := r.j.Put(ctx, PhaseDatabase, journal.Record{State: journal.StateRunning, StartedAt: started}); err != nil {
			return nil, err
		}
	}
	counts, err := r.loadDatabase(ctx, false, started)
	if err != nil {
		if r.j != nil && ctx.Err() == nil {
			rec := journal.Record{State: journal.StateFailed, StartedAt: started, FinishedAt: r.now(), Error: err.Error()}
			if perr := r.j.Put(ctx, PhaseDatabase, rec); perr != nil {
				r.log.Warn("could not record the failure in the journal", "phase", PhaseDatabase, "error", perr)
			}
		}
		return nil, &journal.PhaseError{Phase: PhaseDatabase, Err: err}
	}
	finished := r.now()
	if err := r.j.Put(ctx, PhaseDatabase, journal.Record{State: journal.StateDone, StartedAt: started, FinishedAt: finished, Counts: counts}); err != nil {
		return nil, err
	}
	r.event(Event{Type: EventDone, Phase: PhaseDatabase, Counts: counts, Duration: finished.Sub(started)})
	return &journal.Outcome{Phase: PhaseDatabase, Ran: true, Rechecked: recheck, Counts: counts, StartedAt: started, Duration: finished.Sub(started).String()}, nil
}

// ensureJournal creates the journal (and the namespace it lives in) once
// every check passed.
func (r *runner) ensureJournal(ctx context.Context) error {
	if r.j != nil {
		return nil
	}
	if r.jdb != nil {
		j, err := r.jdb.Open(ctx, r.res.Digest, r.o.fingerprint(r.recreate))
		if err != nil {
			return err
		}
		r.j = j
		return nil
	}
	nss := r.cs.CoreV1().Namespaces()
	if _, err := nss.Get(ctx, r.o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.o.Namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", r.o.Namespace, err)
		}
	} else if err != nil {
		return fmt.Errorf("read namespace %s: %w", r.o.Namespace, err)
	}
	j, err := journal.Open(ctx, r.cs, r.o.Namespace, r.res.Digest, r.o.fingerprint(r.recreate))
	if err != nil {
		return err
	}
	r.j = j
	return nil
}

// ensureAuth pre-creates the Secrets the operator adopts and loads the
// local-auth key; the same call re-checks a done phase, so a resumed restore
// has the key too.
func (r *runner) ensureAuth(ctx context.Context) (journal.Counts, error) {
	counts := journal.Counts{}
	res := &AuthResult{}
	if r.creds != nil {
		_, created, err := auth.EnsurePostgresSecret(ctx, r.cs, r.o.Namespace, *r.creds)
		if err != nil {
			return nil, err
		}
		res.PostgresSecretCreated = created
	} else if _, err := auth.ReadPostgresSecret(ctx, r.cs, r.o.Namespace); err != nil {
		r.warn("the target database connection has no password, so no postgres Secret was pre-created in %s: the operator will generate one that does not match the database", r.o.Namespace)
	}
	key, from, err := auth.EnsureLocalAuthSecretWith(ctx, r.cs, r.o.Namespace, r.nodeZeroKey)
	if err != nil {
		return nil, err
	}
	res.LocalAuthSecretCreated = from == auth.KeyFromNodeZero || from == auth.KeyGenerated
	res.LocalAuthKey = from
	switch {
	case from == auth.KeyFromCluster && r.nodeZeroKey != nil:
		r.warn("secret %s/%s already holds another key, kept: node 0's tokens will not verify on cluster 0 (switchover hands the controller a new token)", r.o.Namespace, auth.LocalAuthSecretName)
	case from == auth.KeyGenerated:
		r.warn("the bundle carries no local-auth key of node 0, so cluster 0's service gets a new one: tokens node 0 issued will not verify there (switchover hands the controller a new token)")
	}
	r.res.key, r.res.Auth = key, res
	if r.plan != nil {
		r.plan.SetSigner(auth.URLSigner{Key: key})
	}
	counts["postgresSecretCreated"] = b2i(res.PostgresSecretCreated)
	counts["localAuthSecretCreated"] = b2i(res.LocalAuthSecretCreated)
	return counts, nil
}

// ranAny reports whether any phase of this run did work.
func ranAny(oc []journal.Outcome) bool {
	for _, o := range oc {
		if o.Ran {
			return true
		}
	}
	return false
}

func samePhases(have []string, want []journal.Phase) bool {
	if len(have) != len(want) {
		return false
	}
	for i, p := range want {
		if have[i] != p.Name {
			return false
		}
	}
	return true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// applyResources applies the plan; its report is kept for the result and the
// report.json of a failure.
func (r *runner) applyResources(ctx context.Context) (journal.Counts, error) {
	if r.plan == nil {
		return nil, errors.New("no resources were planned")
	}
	rep, err := resources.Apply(ctx, r.client, r.plan)
	r.res.Resources = rep
	if err != nil {
		return nil, err
	}
	counts := journal.Counts{}
	for a, n := range rep.Counts {
		counts[string(a)] = int64(n)
	}
	return counts, nil
}
