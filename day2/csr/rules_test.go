package csr

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	bootstrapGroups = []string{"system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"}
	nodeGroups      = []string{"system:nodes", "system:authenticated"}
	hosts           = []Host{
		{Hostname: "extra-worker-0", IPs: []net.IP{net.ParseIP("192.168.111.90"), net.ParseIP("fd00::90")}},
		{Hostname: "extra-worker-1", IPs: []net.IP{net.ParseIP("192.168.111.91")}},
		{Hostname: "", IPs: []net.IP{net.ParseIP("192.168.111.92")}},
	}
	p256Key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
)

type spec struct {
	cn, signer, user string
	org              []string
	ou               []string
	groups           []string
	usages           []string
	dns              []string
	ips              []string
	key              crypto.Signer
}

func clientSpec(host string) spec {
	return spec{cn: "system:node:" + host, org: []string{"system:nodes"}, signer: SignerClient,
		user: BootstrapperUser, groups: bootstrapGroups, usages: []string{"digital signature", "client auth"}}
}

func servingSpec(host string, ips ...string) spec {
	return spec{cn: "system:node:" + host, org: []string{"system:nodes"}, signer: SignerServing,
		user: "system:node:" + host, groups: nodeGroups, usages: []string{"digital signature", "server auth"},
		dns: []string{host}, ips: ips}
}

func build(t testing.TB, name string, s spec) *Request {
	t.Helper()
	key := s.key
	if key == nil {
		key = p256Key
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: s.cn, Organization: s.org, OrganizationalUnit: s.ou}, DNSNames: s.dns}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	obj := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: s.signer, Username: s.user, Groups: s.groups,
		},
	}
	for _, u := range s.usages {
		obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.KeyUsage(u))
	}
	return FromAPI(obj)
}

func TestEvaluate(t *testing.T) {
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	noFacts := Facts{}
	with := func(s spec, f func(*spec)) spec { f(&s); return s }

	tests := []struct {
		name    string
		spec    spec
		facts   Facts
		want    bool   // approve
		wantWhy string // substring of a reason
	}{
		{"client by bootstrapper", clientSpec("extra-worker-0"), noFacts, true, ""},
		{"client with key encipherment and RSA 2048", with(clientSpec("extra-worker-0"), func(s *spec) {
			s.usages = append(s.usages, "key encipherment")
			s.key = rsa2048
		}), noFacts, true, ""},
		{"client renewal by the node itself", with(clientSpec("extra-worker-0"), func(s *spec) {
			s.user, s.groups = "system:node:extra-worker-0", nodeGroups
		}), noFacts, true, ""},
		{"serving by the node", servingSpec("extra-worker-0", "192.168.111.90", "fd00::90"), noFacts, true, ""},
		{"client for a host not in nodes-config", clientSpec("attacker"), noFacts, false, `node "attacker" is not a host`},
		{"client with wrong CN case", with(clientSpec("extra-worker-0"), func(s *spec) { s.cn = "system:node:Extra-Worker-0" }), noFacts, false, "is not a host"},
		{"client requested by another node", with(clientSpec("extra-worker-0"), func(s *spec) {
			s.user, s.groups = "system:node:attacker", nodeGroups
		}), noFacts, false, "not by the node-bootstrapper"},
		{"client with O system:masters", with(clientSpec("extra-worker-0"), func(s *spec) { s.org = []string{"system:masters"} }), noFacts, false, "organization"},
		{"client with an extra O", with(clientSpec("extra-worker-0"), func(s *spec) { s.org = []string{"system:nodes", "system:masters"} }), noFacts, false, "organization"},
		{"client with an OU", with(clientSpec("extra-worker-0"), func(s *spec) { s.ou = []string{"x"} }), noFacts, false, "besides CN and O"},
		{"client with a SAN", with(clientSpec("extra-worker-0"), func(s *spec) { s.dns = []string{"extra-worker-0"} }), noFacts, false, "subject alternative names"},
		{"client with server auth", with(clientSpec("extra-worker-0"), func(s *spec) { s.usages = []string{"digital signature", "client auth", "server auth"} }), noFacts, false, "usages"},
		{"client for an existing node", clientSpec("extra-worker-0"), Facts{ExistingNodes: map[string]bool{"extra-worker-0": true}}, false, "already exists"},
		{"client duplicate", clientSpec("extra-worker-0"), Facts{Approved: map[Key][]string{{0, KindClient}: {"other"}}}, false, "already has an approved client CSR (other)"},
		{"client with RSA 1024", with(clientSpec("extra-worker-0"), func(s *spec) { s.key = rsa1024 }), noFacts, false, "RSA 1024 is not acceptable"},
		{"client with Ed25519", with(clientSpec("extra-worker-0"), func(s *spec) { s.key = ed }), noFacts, false, "Ed25519 is not acceptable"},
		{"client with P-224", with(clientSpec("extra-worker-0"), func(s *spec) { s.key = p224 }), noFacts, false, "P-224 is not acceptable"},
		{"wrong signer", with(clientSpec("extra-worker-0"), func(s *spec) { s.signer = "kubernetes.io/kube-apiserver-client" }), noFacts, false, "not a kubelet signer"},
		{"serving by the bootstrapper", with(servingSpec("extra-worker-0", "192.168.111.90"), func(s *spec) {
			s.user, s.groups = BootstrapperUser, bootstrapGroups
		}), noFacts, false, "not by the node itself"},
		{"serving with a foreign IP", servingSpec("extra-worker-0", "192.168.111.91"), noFacts, false, "IP SAN 192.168.111.91 is not one of the host's IPs"},
		{"serving with an extra DNS SAN", with(servingSpec("extra-worker-0", "192.168.111.90"), func(s *spec) {
			s.dns = append(s.dns, "api.example.com")
		}), noFacts, false, `DNS SAN "api.example.com"`},
		{"serving with CN of another host", with(servingSpec("extra-worker-0", "192.168.111.90"), func(s *spec) {
			s.cn = "system:node:extra-worker-1"
		}), noFacts, false, `CN is "system:node:extra-worker-1"`},
		{"serving with client auth too", with(servingSpec("extra-worker-0", "192.168.111.90"), func(s *spec) {
			s.usages = append(s.usages, "client auth")
		}), noFacts, false, "usages"},
		{"serving without SANs", with(servingSpec("extra-worker-0"), func(s *spec) { s.dns = nil }), noFacts, false, "no DNS or IP"},
		{"host without hostname, matched by IP", with(servingSpec("dhcp-host", "192.168.111.92"), func(s *spec) {}), noFacts, false, "no hostname in nodes-config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Evaluate(build(t, "csr-1", tc.spec), hosts, tc.facts)
			if d.Approve != tc.want {
				t.Fatalf("approve = %v, want %v; reasons: %q", d.Approve, tc.want, d.Reasons)
			}
			if tc.want && len(d.Reasons) > 0 {
				t.Fatalf("approved with reasons %q", d.Reasons)
			}
			if !tc.want && !strings.Contains(strings.Join(d.Reasons, "\n"), tc.wantWhy) {
				t.Fatalf("reasons %q do not say %q", d.Reasons, tc.wantWhy)
			}
		})
	}
}

func TestReviewRefusesCompetingCSRs(t *testing.T) {
	a := build(t, "csr-a", clientSpec("extra-worker-0"))
	b := build(t, "csr-b", clientSpec("extra-worker-0"))
	c := build(t, "csr-c", clientSpec("extra-worker-1"))
	ds := Review([]*Request{a, b, c}, hosts, Facts{})
	for _, d := range ds[:2] {
		if d.Approve || !strings.Contains(strings.Join(d.Reasons, " "), "2 pending client CSRs claim host extra-worker-0 at once (csr-a, csr-b)") {
			t.Errorf("%s: approve=%v reasons=%q", d.Request.Name, d.Approve, d.Reasons)
		}
	}
	if !ds[2].Approve {
		t.Errorf("csr-c for another host refused: %q", ds[2].Reasons)
	}
}

func TestFromAPIRejectsTrailingData(t *testing.T) {
	r := build(t, "x", clientSpec("extra-worker-0"))
	obj := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: r.Parsed.Raw}), []byte("junk")...),
		SignerName: SignerClient, Username: BootstrapperUser, Groups: bootstrapGroups,
		Usages: []certificatesv1.KeyUsage{"digital signature", "client auth"},
	}}
	got := FromAPI(obj)
	if got.ParseErr == nil {
		t.Fatal("trailing data accepted")
	}
	d := Evaluate(got, hosts, Facts{})
	if d.Approve {
		t.Fatal("approved an unreadable request")
	}
}

func TestBadSignatureRefused(t *testing.T) {
	r := build(t, "x", clientSpec("extra-worker-0"))
	raw := append([]byte(nil), r.Parsed.Raw...)
	raw[len(raw)-3] ^= 0xff // corrupt the signature
	obj := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: raw}),
		SignerName: SignerClient, Username: BootstrapperUser, Groups: bootstrapGroups,
		Usages: []certificatesv1.KeyUsage{"digital signature", "client auth"},
	}}
	d := Evaluate(FromAPI(obj), hosts, Facts{})
	if d.Approve {
		t.Fatalf("approved a request whose signature does not verify")
	}
}
