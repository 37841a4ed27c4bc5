package monitor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/day2/csr"
)

// pollCluster reads Nodes and CSRs once, updates the hosts' stages and, with
// approval on, approves what the rules allow.
func (m *monitor) pollCluster(ctx context.Context) {
	nodes, err := m.o.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err == nil {
		var csrs *certificatesv1.CertificateSigningRequestList
		csrs, err = m.o.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err == nil {
			m.lastKubeErr = ""
			m.applyNodes(nodes.Items)
			m.applyCSRs(ctx, csrs.Items, nodes.Items)
			m.warnReadyWithPendingCSRs()
			return
		}
	}
	if ctx.Err() == nil && err.Error() != m.lastKubeErr {
		m.lastKubeErr = err.Error()
		m.emit(nil, EventWarning, "", "", "reading Nodes and CSRs: %v (retrying)", err)
	}
}

// applyNodes finds each host's Node by name, or by an InternalIP that is one of
// the host's IPs.
func (m *monitor) applyNodes(nodes []corev1.Node) {
	for _, h := range m.hosts {
		n := findNode(nodes, h)
		if n == nil {
			continue
		}
		h.node = n.Name
		if h.Hostname == "" {
			h.learnedName = n.Name
		}
		m.reach(h, StageNodeJoined, "Node %s joined the cluster", n.Name)
		ready, why := nodeReady(n)
		if ready && !h.ready {
			h.readyAt = timeNow()
		}
		h.ready = ready
		if ready {
			m.reach(h, StageNodeReady, "Node %s is Ready", n.Name)
		} else if _, seen := h.reached[StageNodeReady]; seen && why != "" {
			m.emitOnce(h, "notready", EventWarning, "Node %s is no longer Ready: %s", n.Name, why)
		}
	}
}

func findNode(nodes []corev1.Node, h *hostState) *corev1.Node {
	if name := h.name(); name != "" {
		for i := range nodes {
			if nodes[i].Name == name {
				return &nodes[i]
			}
		}
	}
	for i := range nodes {
		for _, a := range nodes[i].Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			for _, ip := range h.IPs {
				if ip.String() == a.Address {
					return &nodes[i]
				}
			}
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.Message
		}
	}
	return false, ""
}

// applyCSRs reports every CSR that claims a host and, for the pending ones,
// decides (and with approval on, approves).
func (m *monitor) applyCSRs(ctx context.Context, items []certificatesv1.CertificateSigningRequest, nodes []corev1.Node) {
	sort.Slice(items, func(a, b int) bool {
		ta, tb := items[a].CreationTimestamp, items[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return items[a].Name < items[b].Name
	})
	// Hosts as stage reporting sees them: learned names count here, never for approval.
	reporting := make([]csr.Host, len(m.hosts))
	for i, h := range m.hosts {
		reporting[i] = csr.Host{Hostname: h.name(), IPs: h.IPs}
	}
	facts := csr.Facts{ExistingNodes: map[string]bool{}, Approved: map[csr.Key][]string{}}
	for _, n := range nodes {
		facts.ExistingNodes[n.Name] = true
	}
	objs := map[string]*certificatesv1.CertificateSigningRequest{}
	var pending []*csr.Request
	for i := range items {
		r := csr.FromAPI(&items[i])
		objs[r.Name] = &items[i]
		if si := csr.Match(r, m.strict); si >= 0 && r.State == csr.StateApproved && r.Kind != csr.KindOther {
			k := csr.Key{Host: si, Kind: r.Kind}
			facts.Approved[k] = append(facts.Approved[k], r.Name)
		}
		if r.State == csr.StatePending && (csr.Relevant(r, m.strict) || csr.Match(r, reporting) >= 0) {
			pending = append(pending, r)
		} else if hi := csr.Match(r, reporting); hi >= 0 {
			m.recordCSR(m.hosts[hi], r, "", nil)
		}
	}
	for _, d := range csr.Review(pending, m.strict, facts) {
		m.decide(ctx, objs[d.Request.Name], d, reporting)
	}
}

// decide acts on one decision and reports it.
func (m *monitor) decide(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, d csr.Decision, reporting []csr.Host) {
	r := d.Request
	hi := d.Host
	if hi < 0 {
		hi = csr.Match(r, reporting)
	}
	var h *hostState
	if hi >= 0 {
		h = m.hosts[hi]
	}
	decision := "refused"
	var msg string
	switch {
	case d.Approve && m.o.ApproveCSRs:
		if h == nil || h.csrs[r.Name] == nil {
			// The pending stage comes first. A CSR seen before keeps what
			// the last attempt learned until this one has an answer: an
			// attempt cut by the run's end has none.
			m.recordCSR(h, r, "", nil)
		}
		if err := approve(ctx, m.o.Kube, obj, d, m.strict[d.Host].Hostname); err != nil {
			if ctx.Err() != nil {
				return // the run is over
			}
			decision, d.Reasons = "approval-failed", []string{err.Error()}
			msg = fmt.Sprintf("cannot approve %s CSR %s of %s, which passes every rule: %v (retrying)", r.Kind, r.Name, m.strict[d.Host].Hostname, err)
			break
		}
		m.approvedByUs[r.Name] = true
		r.State = csr.StateApproved
		decision = "approved"
		msg = fmt.Sprintf("approved %s CSR %s of %s (requested by %s, key %s)", r.Kind, r.Name, m.strict[d.Host].Hostname, r.Username, r.KeyDescription())
	case d.Approve:
		decision = "would-approve"
		msg = fmt.Sprintf("%s CSR %s passes every rule; approve it with --approve-csrs or `kubectl certificate approve %s`", r.Kind, r.Name, r.Name)
	default:
		kind := string(r.Kind) + " CSR"
		if r.Kind == csr.KindOther {
			kind = "CSR"
		}
		msg = fmt.Sprintf("not approving %s %s (signer %s, requested by %s): %s", kind, r.Name, r.SignerName, r.Username, strings.Join(d.Reasons, "; "))
	}
	if h == nil {
		m.other[r.Name] = csrResult(r, decision, d.Reasons)
		if m.lastOtherMsg[r.Name] != msg {
			m.lastOtherMsg[r.Name] = msg
			m.emit(nil, EventCSR, "", r.Name, "%s", msg)
		}
		return
	}
	if h.lastCSRMessage[r.Name] != msg {
		h.lastCSRMessage[r.Name] = msg
		m.emit(h, EventCSR, "", r.Name, "%s", msg)
	}
	m.recordCSR(h, r, decision, d.Reasons)
}

// recordCSR keeps the host's view of a CSR and moves its CSR stages.
func (m *monitor) recordCSR(h *hostState, r *csr.Request, decision string, reasons []string) {
	if h == nil {
		return
	}
	if _, ok := h.csrs[r.Name]; !ok {
		h.csrOrder = append(h.csrOrder, r.Name)
	}
	if decision == "" && m.approvedByUs[r.Name] {
		decision = "approved"
	}
	h.csrs[r.Name] = csrResult(r, decision, reasons)
	pendingStage, approvedStage, which := StageFirstCSRPending, StageFirstCSRApproved, "first (client)"
	switch r.Kind {
	case csr.KindServing:
		pendingStage, approvedStage, which = StageSecondCSRPending, StageSecondCSRApproved, "second (serving)"
	case csr.KindOther:
		return
	}
	switch r.State {
	case csr.StatePending:
		m.reach(h, pendingStage, "%s CSR %s requested by %s is pending", which, r.Name, r.Username)
	case csr.StateApproved:
		m.reach(h, pendingStage, "%s CSR %s requested by %s", which, r.Name, r.Username)
		by := "by someone else"
		if m.approvedByUs[r.Name] {
			by = "by this monitor"
		}
		m.reach(h, approvedStage, "%s CSR %s approved %s", which, r.Name, by)
	}
}

func csrResult(r *csr.Request, decision string, reasons []string) *CSRResult {
	return &CSRResult{
		Name: r.Name, Kind: string(r.Kind), Signer: r.SignerName, Requester: r.Username,
		State: string(r.State), Decision: decision, Reasons: append([]string(nil), reasons...),
	}
}

// emitOnce emits a warning once per host and key.
func (m *monitor) emitOnce(h *hostState, key string, t EventType, format string, a ...any) {
	if h.lastCSRMessage["once:"+key] != "" {
		return
	}
	h.lastCSRMessage["once:"+key] = "1"
	m.emit(h, t, "", "", format, a...)
}

// warnReadyWithPendingCSRs says once per host when its Node is Ready while one
// of its CSRs still waits: the node works only partly until it is approved.
func (m *monitor) warnReadyWithPendingCSRs() {
	for _, h := range m.hosts {
		if !h.ready {
			continue
		}
		for _, name := range h.csrOrder {
			if c := h.csrs[name]; c.State == "Pending" && c.Kind != "other" {
				m.emitOnce(h, "ready-pending", EventWarning,
					"Node %s is Ready but %s CSR %s is pending: until it is approved the node is not fully functional (no logs, exec or metrics)", h.node, c.Kind, c.Name)
				break
			}
		}
	}
}
