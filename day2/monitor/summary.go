package monitor

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

var timeNow = time.Now

func itoa(i int) string { return strconv.Itoa(i) }

func sortValidations(vs []Validation) {
	sort.Slice(vs, func(a, b int) bool { return vs[a].ID < vs[b].ID })
}

// outcomeRank orders outcomes: the worst host decides the run's outcome.
var outcomeRank = map[Outcome]int{
	OutcomeAllReady: 0, OutcomeTimeout: 1, OutcomeValidationsFailing: 2, OutcomeCSRBlocked: 3, OutcomeInstallFailed: 4,
}

// classify says why the run did not end with every host Ready.
func (m *monitor) classify() Outcome {
	worst := OutcomeAllReady
	for _, h := range m.hosts {
		if m.done(h) {
			continue
		}
		o, _ := m.problem(h)
		if outcomeRank[o] > outcomeRank[worst] {
			worst = o
		}
	}
	if worst == OutcomeAllReady {
		// Every host was Ready but some still waited for a serving CSR.
		worst = OutcomeTimeout
	}
	return worst
}

// problem says what holds a host back, and which outcome that is.
func (m *monitor) problem(h *hostState) (Outcome, string) {
	if h.ready {
		if m.o.ApproveCSRs {
			if _, ok := h.reached[StageSecondCSRApproved]; !ok {
				return OutcomeTimeout, "Node is Ready but its serving CSR was not approved yet" + pendingNote(h)
			}
		}
		return OutcomeAllReady, ""
	}
	if failedStatuses[h.status] {
		return OutcomeInstallFailed, fmt.Sprintf("assisted-service reports status %s: %s", h.status, h.statusInfo)
	}
	for _, name := range h.csrOrder {
		c := h.csrs[name]
		if c.State != "Pending" || c.Kind == "other" {
			continue
		}
		if h.ownCSRApproved(c.Kind) {
			// The host's own CSR of this kind is approved: this pending one
			// is a look-alike. It stays listed (with its decision) in the
			// host's CSRs and never becomes the host's outcome.
			continue
		}
		switch c.Decision {
		case "refused":
			return OutcomeCSRBlocked, fmt.Sprintf("%s CSR %s is pending and was not approved: %s", c.Kind, c.Name, strings.Join(c.Reasons, "; "))
		case "approval-failed":
			return OutcomeCSRBlocked, fmt.Sprintf("%s CSR %s passes every rule but approving it failed: %s", c.Kind, c.Name, strings.Join(c.Reasons, "; "))
		case "would-approve":
			return OutcomeCSRBlocked, fmt.Sprintf("%s CSR %s is pending approval (run with --approve-csrs, or approve it by hand)", c.Kind, c.Name)
		}
	}
	if _, installing := h.reached[StageInstalling]; !installing {
		if f := h.failingValidations(); len(f) > 0 {
			var s []string
			for _, v := range f {
				s = append(s, v.ID+": "+v.Message)
			}
			return OutcomeValidationsFailing, "validations failing: " + strings.Join(s, "; ")
		}
	}
	if _, ok := h.reached[StageReachable]; !ok {
		if len(h.IPs) == 0 {
			return OutcomeTimeout, "no IP known (give one with --ip-addresses) and no CSR or Node of it seen"
		}
		return OutcomeTimeout, "no answer from " + strings.Join(ipStrings(h.IPs), ", ")
	}
	st := furthest(h)
	msg := fmt.Sprintf("last stage reached: %s", st)
	if st == StageReachable && h.apiErr != "" {
		msg += ": assisted-service API: " + h.apiErr
	}
	return OutcomeTimeout, msg
}

func pendingNote(h *hostState) string {
	for _, name := range h.csrOrder {
		if c := h.csrs[name]; c.State == "Pending" && len(c.Reasons) > 0 {
			return fmt.Sprintf(" (CSR %s: %s)", c.Name, strings.Join(c.Reasons, "; "))
		}
	}
	return ""
}

func furthest(h *hostState) Stage {
	var last Stage
	for _, s := range Stages {
		if _, ok := h.reached[s]; ok {
			last = s
		}
	}
	return last
}

func (m *monitor) finish(o Outcome) *Result {
	r := m.snapshot(o)
	r.EndTime = time.Now()
	return r
}

// snapshot is the Result as of now.
func (m *monitor) snapshot(o Outcome) *Result {
	r := &Result{Outcome: o, StartTime: m.start, Hosts: []HostResult{}}
	for _, h := range m.hosts {
		hr := HostResult{
			Host: h.Label, Hostname: h.Hostname, IPs: ipStrings(h.IPs), Ready: h.ready,
			Stage: furthest(h), Stages: []StageTime{},
			AssistedStatus: h.status, AssistedStatusInfo: h.statusInfo,
			FailingValidations: h.failingValidations(), Node: h.node,
		}
		for _, s := range Stages {
			if t, ok := h.reached[s]; ok {
				hr.Stages = append(hr.Stages, StageTime{Stage: s, Time: t})
			}
		}
		if h.progress != nil {
			p := *h.progress
			hr.InstallProgress = &p
		}
		for _, name := range h.csrOrder {
			hr.CSRs = append(hr.CSRs, *h.csrs[name])
		}
		if !m.done(h) {
			_, hr.Problem = m.problem(h)
		}
		r.Hosts = append(r.Hosts, hr)
	}
	var names []string
	for n := range m.other {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.OtherCSRs = append(r.OtherCSRs, *m.other[n])
	}
	return r
}

// ownCSRApproved reports whether the host's CSR of kind (client or serving)
// was approved, by this run or by someone else.
func (h *hostState) ownCSRApproved(kind string) bool {
	st := StageFirstCSRApproved
	if kind == "serving" {
		st = StageSecondCSRApproved
	}
	_, ok := h.reached[st]
	return ok
}
