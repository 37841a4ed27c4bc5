package plugin

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
)

// monitorView shows the monitor's progress on stderr: on a terminal, a block
// with one line per host redrawn in place, events scrolling above it; anywhere
// else, one line per event.
type monitorView struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	hosts []string
	last  *monitor.Result
	drawn int // lines of the status block currently on screen
	width int // terminal columns; lines are cut to fit so redrawing stays exact
	start time.Time
}

func newMonitorView(w io.Writer, live bool, hosts []monitor.Host) *monitorView {
	v := &monitorView{w: w, live: live, start: time.Now(), width: 100}
	if f, ok := w.(*os.File); ok && live {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			v.width = cols
		}
	}
	for _, h := range hosts {
		v.hosts = append(v.hosts, h.Label)
	}
	return v
}

func (v *monitorView) event(e monitor.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	fmt.Fprintln(v.w, eventLine(e, v.live))
	v.draw()
}

func (v *monitorView) poll(r *monitor.Result) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = r
	v.erase()
	v.draw()
}

func (v *monitorView) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	v.live = false
}

func eventLine(e monitor.Event, short bool) string {
	ts := e.Time.UTC().Format(time.RFC3339)
	if short {
		ts = e.Time.Format("15:04:05")
	}
	who := e.Host
	if who == "" {
		who = "cluster"
	}
	kind := string(e.Type)
	if e.Stage != "" {
		kind = string(e.Stage)
	}
	return fmt.Sprintf("%s %s: [%s] %s", ts, who, kind, e.Message)
}

func (v *monitorView) erase() {
	if !v.live || v.drawn == 0 {
		return
	}
	fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn)
	v.drawn = 0
}

func (v *monitorView) draw() {
	if !v.live {
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "HOST\tSTAGE\tNOW (%s)\t\n", time.Since(v.start).Round(time.Second))
	for i, label := range v.hosts {
		stage, now := "waiting", ""
		if v.last != nil && i < len(v.last.Hosts) {
			h := v.last.Hosts[i]
			if h.Stage != "" {
				stage = fmt.Sprintf("%s (%d/%d)", h.Stage, stageIndex(h.Stage)+1, len(monitor.Stages))
			}
			now = hostNow(h)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", label, stage, now)
	}
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		fmt.Fprintln(v.w, truncate(strings.TrimRight(l, " "), v.width-1))
	}
	v.drawn = len(lines)
}

func stageIndex(s monitor.Stage) int {
	for i, x := range monitor.Stages {
		if x == s {
			return i
		}
	}
	return -1
}

// hostNow is the one thing to know about a host right now.
func hostNow(h monitor.HostResult) string {
	switch {
	case h.Ready:
		return "Ready"
	case h.Problem != "" && len(h.FailingValidations) > 0:
		return h.Problem
	case h.InstallProgress != nil && h.Node == "":
		p := h.InstallProgress
		return fmt.Sprintf("%s %d%%", p.Stage, p.Percentage)
	case h.AssistedStatus != "" && h.Node == "":
		return "status " + h.AssistedStatus
	}
	return h.Problem
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// printMonitorSummary writes the human summary to stdout: one line per host,
// then the CSRs that were not approved, with why.
func printMonitorSummary(w io.Writer, r *monitor.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tREADY\tSTAGE\tNODE\tCSRS\tPROBLEM")
	for _, h := range r.Hosts {
		ready := "no"
		if h.Ready {
			ready = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Host, ready, orDash(string(h.Stage)), orDash(h.Node), csrCounts(h.CSRs), orDash(h.Problem))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var refused []string
	for _, h := range r.Hosts {
		for _, c := range h.CSRs {
			if (c.Decision == "refused" || c.Decision == "approval-failed") && c.State == "Pending" {
				refused = append(refused, fmt.Sprintf("  %s (%s, for %s, requested by %s): %s", c.Name, c.Kind, h.Host, c.Requester, strings.Join(c.Reasons, "; ")))
			}
		}
	}
	for _, c := range r.OtherCSRs {
		refused = append(refused, fmt.Sprintf("  %s (%s, requested by %s): %s", c.Name, c.Kind, c.Requester, strings.Join(c.Reasons, "; ")))
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "\nCSRs not approved:\n%s\n", strings.Join(refused, "\n"))
	}
	fmt.Fprintf(w, "\nOutcome: %s\n", r.Outcome)
	return nil
}

func csrCounts(cs []monitor.CSRResult) string {
	if len(cs) == 0 {
		return "-"
	}
	n := map[string]int{}
	for _, c := range cs {
		n[strings.ToLower(c.State)]++
	}
	var parts []string
	for _, s := range []string{"approved", "pending", "denied", "failed"} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
