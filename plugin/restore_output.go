package plugin

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

type recreateDifference = recreate.Difference

// RestoreResult is the -o json|yaml result of `restore`.
type RestoreResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*restore.Result
}

func newRestoreResult(r *restore.Result) *RestoreResult {
	if r.Phases == nil {
		r.Phases = []journal.Outcome{}
	}
	return &RestoreResult{APIVersion: ResultAPIVersion, Kind: "RestoreResult", Result: r}
}

// restoreError maps a restore failure to one clear message, an exit code per
// kind and what to do next.
func restoreError(err error) error {
	var oe *restore.OptionsError
	var bc *restore.BundleContentError
	var conflict *resources.ConflictError
	var fp *journal.FingerprintMismatchError
	var mismatch *kubekeys.MismatchError
	var drift *restore.DriftError
	var apply *resources.ApplyError
	var unreachable *resources.UnreachableError
	var missing *resources.MissingAPIError
	switch {
	case errors.As(err, &oe), errors.As(err, &bc):
		return clierr.New(err, "See 'restore --help' for the flags and what each needs; nothing was changed.", clierr.ExitUsage)
	case errors.Is(err, restore.ErrTargetNotEmpty), errors.Is(err, pg.ErrTargetNotEmpty):
		return clierr.New(err, "Restore into an empty database and data directory, or pass --replace to replace what they hold.", clierr.ExitRestoreTargetNotEmpty)
	case errors.As(err, &conflict):
		return clierr.New(err, "", clierr.ExitRestoreConflict)
	case errors.As(err, &fp):
		return clierr.New(err, "", clierr.ExitRestoreConflict)
	case errors.As(err, &mismatch):
		return clierr.New(err, "The bundle's CRs and database rows do not describe the same clusters; re-create the bundle from one node 0, or use --recreate-resources.", clierr.ExitRestoreKubeKeys)
	case errors.As(err, &drift):
		return clierr.New(err, "", clierr.ExitRestoreDrift)
	case errors.As(err, &apply):
		return clierr.New(err, "Fix the cause and run the same command again: the restore resumes where it stopped.", clierr.ExitRestoreApply)
	case errors.As(err, &unreachable):
		return clierr.New(err, "Check --kubeconfig and --context, and that cluster 0's API server answers from here; then run the same command again.", clierr.ExitRestoreCluster)
	case errors.As(err, &missing):
		return clierr.New(err, "", clierr.ExitRestoreCluster)
	case errors.Is(err, pg.ErrWrongMajor):
		return clierr.New(err, "Restore into a database of the major cluster 0's assisted-service runs (its operator's DATABASE_IMAGE); migrate's restore Job does this by itself.", clierr.ExitRestoreWrongPostgres)
	case errors.Is(err, pg.ErrOlderTarget):
		return clierr.New(err, "Restore into a database on the bundle's PostgreSQL major or a newer one (docs/postgresql.md lists which release runs which).", clierr.ExitRestoreOlderPostgres)
	}
	if mapped := bundleError(err); mapped != err {
		return mapped
	}
	var pe *journal.PhaseError
	if errors.As(err, &pe) {
		return clierr.New(err, "Fix the cause and run the same command again: the restore resumes where it stopped.", clierr.ExitError)
	}
	return err
}

// eventPrinter writes one line per restore event on stderr.
type eventPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *eventPrinter) print(e restore.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Type {
	case restore.EventCheck:
		fmt.Fprintf(p.w, "check: %s\n", e.Message)
	case restore.EventStart:
		fmt.Fprintf(p.w, "%s: started\n", e.Phase)
	case restore.EventDone:
		if e.Message != "" {
			fmt.Fprintf(p.w, "%s: %s\n", e.Phase, e.Message)
			return
		}
		fmt.Fprintf(p.w, "%s: done in %s%s\n", e.Phase, e.Duration.Round(time.Millisecond), countsText(e.Counts))
	case restore.EventSkipped:
		fmt.Fprintf(p.w, "%s: %s\n", e.Phase, e.Message)
	case restore.EventWarning:
		fmt.Fprintf(p.w, "warning: %s\n", e.Message)
	}
}

func countsText(c journal.Counts) string {
	if len(c) == 0 {
		return ""
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return " (" + strings.Join(parts, " ") + ")"
}

func printRestoreResult(w io.Writer, caller string, r *RestoreResult) error {
	what := "Restored"
	if r.DryRun != resources.DryRunNone {
		what = "Checked (dry run " + string(r.DryRun) + ", nothing written)"
	}
	ns := r.Namespace
	if ns == "" {
		ns = "(no cluster)"
	}
	fmt.Fprintf(w, "%s %s\nDigest: %s  namespace: %s  resources: %s\n", what, r.Reference, r.Digest, ns, r.ResourcesFrom)
	for _, p := range r.Phases {
		how := "done by an earlier run"
		if p.Ran {
			how = "done in " + p.Duration
		}
		fmt.Fprintf(w, "  %-10s %s%s\n", p.Phase, how, countsText(p.Counts))
	}
	if d := r.Database; d != nil && d.RolledBack {
		fmt.Fprintf(w, "  database   %d tables, %d rows loaded and checked, then rolled back\n", d.Tables, d.Rows)
	}
	if d := r.Database; d != nil && d.NotLoaded {
		fmt.Fprintf(w, "  database   %d tables, %d rows verified; target checked read-only, nothing loaded\n", d.Tables, d.Rows)
	}
	if rep := r.Resources; rep != nil {
		fmt.Fprintln(w, "Objects:")
		for _, res := range rep.Results {
			line := fmt.Sprintf("  %-9s %s", res.Action, res.ObjectKey)
			if res.Reason != "" {
				line += "  (" + res.Reason + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	if a := r.Auth; a != nil {
		switch a.LocalAuthKey {
		case "node0", "node0-existing":
			fmt.Fprintln(w, "Local-auth key: node 0's, carried in the bundle: the tokens node 0 issued verify on cluster 0")
		case "generated":
			fmt.Fprintln(w, "Local-auth key: new: tokens node 0 issued do not verify on cluster 0 (switchover gives the controller a new one)")
		}
	}
	if r.Receipt != nil && r.Namespace == "" {
		fmt.Fprintf(w, "Receipt written to the target database (no cluster): %s\n", r.Digest)
	} else if r.Receipt != nil {
		fmt.Fprintf(w, "Receipt written. On node 0: %s assisted wait-for restore-complete -n %s --bundle %s\n", caller, r.Namespace, r.Digest)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
	return nil
}
