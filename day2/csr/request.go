// Package csr decides which kubelet certificate signing requests provably
// belong to a new host of nodes-config.yaml (day2/monitor approves those).
//
// Matching never uses reverse DNS: a CSR names its node in the subject common
// name (client CSRs, system:node:<name>) or in its requesting user (serving CSRs,
// requested by system:node:<name> itself), and those names are compared with the
// hostnames of nodes-config.yaml; IP SANs are compared with the host's known
// addresses. Rules (Evaluate) return every reason not to approve, so the monitor
// can say why for each CSR. The package never prints.
package csr

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// Signers, identities and groups of the kubelet's two certificates.
const (
	SignerClient     = certificatesv1.KubeAPIServerClientKubeletSignerName // first CSR: the kubelet's client certificate
	SignerServing    = certificatesv1.KubeletServingSignerName             // second CSR: the kubelet's serving certificate
	BootstrapperUser = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
	NodeUserPrefix   = "system:node:"
	NodesGroup       = "system:nodes"
)

// Kind is which of a kubelet's certificates a CSR asks for.
type Kind string

// Kinds of CSR. Other is any signer that is not one of the kubelet's.
const (
	KindClient  Kind = "client"
	KindServing Kind = "serving"
	KindOther   Kind = "other"
)

// State is where a CSR stands.
type State string

// States of a CSR, from its status conditions.
const (
	StatePending  State = "Pending"
	StateApproved State = "Approved"
	StateDenied   State = "Denied"
	StateFailed   State = "Failed"
)

// Request is a CSR as the rules see it: what the API server recorded about who
// asked (username, groups), what was asked (signer, usages) and the decoded x509
// request.
type Request struct {
	Name       string
	SignerName string
	Kind       Kind
	Username   string
	Groups     []string
	Usages     []string
	State      State
	Created    time.Time

	// Parsed is the x509 request; nil when ParseErr is set.
	Parsed   *x509.CertificateRequest
	ParseErr error
	// CommonName and the SANs repeat Parsed for convenience.
	CommonName string
	DNSNames   []string
	IPs        []net.IP
}

// FromAPI builds a Request from a CertificateSigningRequest object.
func FromAPI(obj *certificatesv1.CertificateSigningRequest) *Request {
	r := &Request{
		Name:       obj.Name,
		SignerName: obj.Spec.SignerName,
		Username:   obj.Spec.Username,
		Groups:     append([]string(nil), obj.Spec.Groups...),
		State:      stateOf(obj),
		Created:    obj.CreationTimestamp.Time,
	}
	for _, u := range obj.Spec.Usages {
		r.Usages = append(r.Usages, string(u))
	}
	switch r.SignerName {
	case SignerClient:
		r.Kind = KindClient
	case SignerServing:
		r.Kind = KindServing
	default:
		r.Kind = KindOther
	}
	r.Parsed, r.ParseErr = parsePEM(obj.Spec.Request)
	if r.Parsed != nil {
		r.CommonName = r.Parsed.Subject.CommonName
		r.DNSNames = r.Parsed.DNSNames
		r.IPs = r.Parsed.IPAddresses
	}
	return r
}

func stateOf(obj *certificatesv1.CertificateSigningRequest) State {
	st := StatePending
	for _, c := range obj.Status.Conditions {
		if c.Status == "False" {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return StateDenied
		case certificatesv1.CertificateFailed:
			return StateFailed
		case certificatesv1.CertificateApproved:
			st = StateApproved
		}
	}
	return st
}

// parsePEM decodes exactly one CERTIFICATE REQUEST block: trailing data could
// hide a second request that another tool reads instead.
func parsePEM(b []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(b)
	switch {
	case block == nil:
		return nil, fmt.Errorf("request is not PEM")
	case block.Type != "CERTIFICATE REQUEST":
		return nil, fmt.Errorf("request is a %q PEM block, not CERTIFICATE REQUEST", block.Type)
	case len(strings.TrimSpace(string(rest))) > 0:
		return nil, fmt.Errorf("request has data after its PEM block")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse x509 request: %w", err)
	}
	return cr, nil
}

// NodeNameFromCN is the node a client CSR claims: <name> of CN system:node:<name>.
func (r *Request) NodeNameFromCN() string {
	return strings.TrimPrefix(r.CommonName, NodeUserPrefix)
}

// NodeNameFromUser is the node that asked: <name> of user system:node:<name>.
func (r *Request) NodeNameFromUser() string {
	if !strings.HasPrefix(r.Username, NodeUserPrefix) {
		return ""
	}
	return strings.TrimPrefix(r.Username, NodeUserPrefix)
}

// ClaimedNode is the node name the CSR is about: the CN's for a client CSR
// (the bootstrapper asks on the node's behalf), the requester's for a serving CSR,
// and whichever names a node for other signers.
func (r *Request) ClaimedNode() string {
	cn := ""
	if strings.HasPrefix(r.CommonName, NodeUserPrefix) {
		cn = r.NodeNameFromCN()
	}
	switch r.Kind {
	case KindServing:
		if n := r.NodeNameFromUser(); n != "" {
			return n
		}
		return cn
	default:
		if cn != "" {
			return cn
		}
		return r.NodeNameFromUser()
	}
}

// KeyDescription names the public key type and size ("ECDSA P-256", "RSA 2048").
func (r *Request) KeyDescription() string {
	if r.Parsed == nil {
		return "unknown"
	}
	switch k := r.Parsed.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case ed25519.PublicKey:
		return "Ed25519"
	default:
		return fmt.Sprintf("%T", k)
	}
}
