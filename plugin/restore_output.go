package plugin

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
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
