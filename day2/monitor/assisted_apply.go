package monitor

import (
	"errors"
	"strings"
)

// applyAssisted turns one read of the host's assisted-service into events:
// the API coming up, status changes, validations starting or stopping to fail,
// installation progress.
func (m *monitor) applyAssisted(h *hostState, r *hostReport, err error) {
	if r != nil {
		m.reach(h, StageReachable, "host answers on %s", hostOf(r.url))
		m.reach(h, StageAssistedServiceUp, "assisted-service API answers at %s", r.url)
	}
	if err != nil {
		msg := err.Error()
		switch {
		case errors.Is(err, ErrUnauthorized):
			if !h.authWarned {
				h.authWarned = true
				m.emit(h, EventWarning, "", "", "%s", msg)
			}
		case h.reached[StageAssistedServiceUp].IsZero():
			// Not up yet: the service takes minutes to start after boot.
		case msg != h.apiErr:
			m.emit(h, EventWarning, "", "", "assisted-service API: %s", msg)
		}
		h.apiErr = msg
		return
	}
	h.apiErr = ""
	if r.host == nil {
		return
	}
	host := r.host
	if h.Hostname == "" && host.RequestedHostname != "" {
		h.learnedName = host.RequestedHostname
	}
	if host.Status != h.status || host.StatusInfo != h.statusInfo {
		h.status, h.statusInfo = host.Status, host.StatusInfo
		if failedStatuses[host.Status] {
			m.emit(h, EventWarning, "", "", "installation failed: status %s: %s", host.Status, host.StatusInfo)
		} else {
			m.emit(h, EventStatus, "", "", "status %s: %s", host.Status, host.StatusInfo)
		}
	}
	m.applyValidations(h, host.ValidationsInfo)
	if installingStatuses[host.Status] || (host.Progress != nil && host.Progress.CurrentStage != "") {
		m.reach(h, StageInstalling, "installation started (status %s)", host.Status)
	}
	if p := host.Progress; p != nil && p.CurrentStage != "" {
		np := &Progress{Stage: p.CurrentStage, Percentage: p.InstallationPercentage, Info: p.ProgressInfo}
		if h.progress == nil || *h.progress != *np {
			h.progress = np
			m.emit(h, EventProgress, "", "", "%s", progressText(np))
		}
		if rebootStages[p.CurrentStage] {
			h.apiDone = true
		}
	}
	if host.Status == "added-to-existing-cluster" || host.Status == "installed" {
		h.apiDone = true
	}
}

func (m *monitor) applyValidations(h *hostState, info string) {
	vs, err := parseValidations(info)
	if err != nil {
		m.emit(h, EventWarning, "", "", "cannot read the host's validations: %v", err)
		return
	}
	if len(vs) == 0 {
		return
	}
	now := map[string]Validation{}
	nFailing, nPassing := 0, 0
	for _, v := range vs {
		now[v.ID] = v
		prev, seen := h.validations[v.ID]
		switch {
		case failing(v.Status):
			nFailing++
			if !seen || !failing(prev.Status) || prev.Message != v.Message {
				m.emit(h, EventValidation, "", "", "validation %s failing: %s", v.ID, v.Message)
			}
		case v.Status == "success":
			nPassing++
			if seen && failing(prev.Status) {
				m.emit(h, EventValidation, "", "", "validation %s passing: %s", v.ID, v.Message)
			}
		}
	}
	h.validations = now
	if nFailing == 0 {
		m.reach(h, StageValidationsPassed, "no validation failing (%d passing, %d pending or not applicable)", nPassing, len(vs)-nPassing)
	}
}

func (h *hostState) failingValidations() []Validation {
	var out []Validation
	for _, v := range h.validations {
		if failing(v.Status) {
			out = append(out, v)
		}
	}
	sortValidations(out)
	return out
}

func progressText(p *Progress) string {
	s := "installation stage " + p.Stage
	if p.Percentage > 0 {
		s += ": " + itoa(p.Percentage) + "%"
	}
	if p.Info != "" {
		s += " (" + p.Info + ")"
	}
	return s
}

// hostOf is the host part of a base URL: http://<host:port>/...
func hostOf(url string) string {
	s := strings.TrimPrefix(url, "http://")
	if i := strings.Index(s, "/"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, ":"); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, "[]")
}
