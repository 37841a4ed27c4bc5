package csr

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/asn1"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
)

// Host is a new node as nodes-config.yaml (and --ip-addresses) describe it.
type Host struct {
	// Hostname is the node name nodes-config.yaml gives it; empty when it gives
	// none, and then no CSR is ever approved for the host.
	Hostname string
	IPs      []net.IP
}

// Key names one expected CSR: a host (index into the host list) and a kind.
type Key struct {
	Host int
	Kind Kind
}

// Facts are what the cluster says when a decision is made.
type Facts struct {
	// ExistingNodes holds the names of the Nodes that exist.
	ExistingNodes map[string]bool
	// Approved lists the CSRs already approved for each expected CSR, by
	// anyone, in this run or before it.
	Approved map[Key][]string
}

// Decision is the verdict on one pending CSR.
type Decision struct {
	Request *Request
	// Host is the index of the host the CSR claims, -1 when it claims none.
	Host    int
	Approve bool
	// Reasons say why not, one per broken rule; empty when Approve.
	Reasons []string
}

// Usages kubelets request: digital signature plus client or server auth, and key
// encipherment for RSA keys (and on older kubelets for every key).
var (
	clientUsages      = []string{"client auth", "digital signature"}
	clientUsagesRSA   = []string{"client auth", "digital signature", "key encipherment"}
	servingUsages     = []string{"digital signature", "server auth"}
	servingUsagesRSA  = []string{"digital signature", "key encipherment", "server auth"}
	bootstrapperGroup = "system:serviceaccounts:openshift-machine-config-operator"
)

// Match returns the index of the host a CSR claims, or -1. A CSR claims a host
// when the node it names (ClaimedNode) is the host's nodes-config hostname, or,
// when it names none of them, when one of its IP SANs is one of the host's IPs.
func Match(r *Request, hosts []Host) int {
	if name := r.ClaimedNode(); name != "" {
		for i, h := range hosts {
			if h.Hostname != "" && h.Hostname == name {
				return i
			}
		}
	}
	for i, h := range hosts {
		for _, ip := range r.IPs {
			if containsIP(h.IPs, ip) {
				return i
			}
		}
	}
	return -1
}

// Relevant reports whether the monitor should say something about a CSR: it
// uses a kubelet signer, or it claims a host of nodes-config.yaml.
func Relevant(r *Request, hosts []Host) bool {
	return r.Kind != KindOther || Match(r, hosts) >= 0
}

// Review decides on a batch of pending CSRs: each is checked against every rule
// (Evaluate), then, so that one approval goes to one expected CSR, when several
// pending CSRs would qualify for the same host and kind, none is approved.
func Review(pending []*Request, hosts []Host, facts Facts) []Decision {
	out := make([]Decision, 0, len(pending))
	byKey := map[Key][]int{}
	for _, r := range pending {
		d := Evaluate(r, hosts, facts)
		if d.Approve {
			k := Key{d.Host, r.Kind}
			byKey[k] = append(byKey[k], len(out))
		}
		out = append(out, d)
	}
	for k, idx := range byKey {
		if len(idx) < 2 {
			continue
		}
		var names []string
		for _, i := range idx {
			names = append(names, out[i].Request.Name)
		}
		sort.Strings(names)
		for _, i := range idx {
			out[i].Approve = false
			out[i].Reasons = append(out[i].Reasons, fmt.Sprintf(
				"%d pending %s CSRs claim host %s at once (%s): only one can be the kubelet's; approve the right one by hand",
				len(idx), k.Kind, hosts[k.Host].Hostname, strings.Join(names, ", ")))
		}
	}
	return out
}

// Evaluate checks one pending CSR against every rule and returns all reasons
// not to approve it.
func Evaluate(r *Request, hosts []Host, facts Facts) Decision {
	d := Decision{Request: r, Host: Match(r, hosts)}
	why := func(format string, a ...any) { d.Reasons = append(d.Reasons, fmt.Sprintf(format, a...)) }

	if d.Host < 0 {
		if name := r.ClaimedNode(); name != "" {
			why("node %q is not a host of nodes-config.yaml", name)
		} else {
			why("names no node (CN %q, requester %q) and no IP of a host of nodes-config.yaml", r.CommonName, r.Username)
		}
		return d
	}
	h := hosts[d.Host]
	if h.Hostname == "" {
		why("the host has no hostname in nodes-config.yaml, so no CSR can be proven to be its own")
		return d
	}
	if r.ParseErr != nil {
		why("the request cannot be read: %v", r.ParseErr)
		return d
	}
	nodeUser := NodeUserPrefix + h.Hostname
	switch r.Kind {
	case KindClient:
		switch {
		case r.Username == BootstrapperUser && slices.Contains(r.Groups, bootstrapperGroup):
			if facts.ExistingNodes[h.Hostname] {
				why("Node %q already exists: a bootstrap client certificate for it would take over that node", h.Hostname)
			}
		case r.Username == nodeUser && slices.Contains(r.Groups, NodesGroup):
			// A renewal by the node itself: it already holds this identity.
		default:
			why("requested by %q, not by the node-bootstrapper service account or by %s itself", r.Username, nodeUser)
		}
		if n := len(r.DNSNames) + len(r.IPs) + len(r.Parsed.EmailAddresses) + len(r.Parsed.URIs); n > 0 {
			why("has %d subject alternative names (%s): kubelet client certificates have none", n, sanList(r))
		}
		checkUsages(r, clientUsages, clientUsagesRSA, why)
	case KindServing:
		if r.Username != nodeUser || !slices.Contains(r.Groups, NodesGroup) {
			why("requested by %q, not by the node itself (%s in group %s)", r.Username, nodeUser, NodesGroup)
		}
		checkServingSANs(r, h, why)
		checkUsages(r, servingUsages, servingUsagesRSA, why)
	default:
		why("signer %q is not a kubelet signer: only %s and %s CSRs are approved", r.SignerName, SignerClient, SignerServing)
	}
	if r.CommonName != nodeUser {
		why("CN is %q, not %q", r.CommonName, nodeUser)
	}
	checkSubject(r, why)
	checkKey(r, why)
	if err := r.Parsed.CheckSignature(); err != nil {
		why("the request's signature does not verify: %v", err)
	}
	if r.Kind != KindOther {
		var others []string
		for _, name := range facts.Approved[Key{d.Host, r.Kind}] {
			if name != r.Name {
				others = append(others, name)
			}
		}
		if len(others) > 0 {
			why("host %s already has an approved %s CSR (%s): only one is approved per host", h.Hostname, r.Kind, strings.Join(others, ", "))
		}
	}
	d.Approve = len(d.Reasons) == 0
	return d
}

// checkSubject wants exactly one O=system:nodes and one CN, nothing else.
func checkSubject(r *Request, why func(string, ...any)) {
	s := r.Parsed.Subject
	if len(s.Organization) != 1 || s.Organization[0] != NodesGroup {
		why("organization is %q, not exactly [%s]", s.Organization, NodesGroup)
	}
	cn, extra := 0, 0
	for _, n := range s.Names {
		switch {
		case n.Type.Equal(oidCommonName):
			cn++
		case n.Type.Equal(oidOrganization):
		default:
			extra++
		}
	}
	if cn > 1 {
		why("subject has %d common names", cn)
	}
	if extra > 0 {
		why("subject %q has attributes besides CN and O", s.String())
	}
}

var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
)

func checkUsages(r *Request, plain, withKE []string, why func(string, ...any)) {
	got := append([]string(nil), r.Usages...)
	sort.Strings(got)
	if slices.Equal(got, plain) || slices.Equal(got, withKE) {
		return
	}
	why("usages are %q, not exactly %q (optionally with \"key encipherment\")", r.Usages, plain)
}

func checkServingSANs(r *Request, h Host, why func(string, ...any)) {
	if len(r.DNSNames)+len(r.IPs) == 0 {
		why("has no DNS or IP subject alternative name")
	}
	for _, n := range r.DNSNames {
		if n != h.Hostname {
			why("DNS SAN %q is not the host's hostname %q", n, h.Hostname)
		}
	}
	for _, ip := range r.IPs {
		if !containsIP(h.IPs, ip) {
			why("IP SAN %s is not one of the host's IPs %s (from nodes-config.yaml or --ip-addresses)", ip, ipList(h.IPs))
		}
	}
	if len(r.Parsed.EmailAddresses) > 0 || len(r.Parsed.URIs) > 0 {
		why("has email or URI subject alternative names")
	}
}

// checkKey accepts the keys kubelets generate: ECDSA P-256/P-384/P-521 and RSA
// of 2048 to 8192 bits.
func checkKey(r *Request, why func(string, ...any)) {
	switch k := r.Parsed.PublicKey.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve.Params().Name {
		case "P-256", "P-384", "P-521":
			return
		}
	case *rsa.PublicKey:
		if b := k.N.BitLen(); b >= 2048 && b <= 8192 {
			return
		}
	}
	why("key %s is not acceptable: use ECDSA P-256/P-384/P-521 or RSA of 2048 to 8192 bits", r.KeyDescription())
}

func containsIP(list []net.IP, ip net.IP) bool {
	for _, x := range list {
		if x.Equal(ip) {
			return true
		}
	}
	return false
}

func ipList(ips []net.IP) string {
	if len(ips) == 0 {
		return "(none known)"
	}
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ", ")
}

func sanList(r *Request) string {
	var s []string
	s = append(s, r.DNSNames...)
	for _, ip := range r.IPs {
		s = append(s, ip.String())
	}
	s = append(s, r.Parsed.EmailAddresses...)
	for _, u := range r.Parsed.URIs {
		s = append(s, u.String())
	}
	return strings.Join(s, ", ")
}
