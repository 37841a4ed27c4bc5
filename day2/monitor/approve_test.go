package monitor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/csr"
)

func bootstrapCSR(t *testing.T, name, node string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: csr.SignerClient, Username: csr.BootstrapperUser,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"},
			Usages: []certificatesv1.KeyUsage{"digital signature", "client auth"},
		},
	}
}

// runApproving monitors one host with CSR approval on until Timeout: what it
// reports depends on the rounds that ran, so the budget leaves room for a
// loaded machine (700 ms once ended at FirstCSRPending during make test, the
// refused approval not yet tried); the tests that use it run in parallel.
func runApproving(t *testing.T, kube *fake.Clientset) (*Result, []Event) {
	t.Helper()
	var events []Event
	res, err := Run(context.Background(), Options{
		Hosts: []Host{{Label: "extra-worker-0", Hostname: "extra-worker-0", IPs: []net.IP{net.ParseIP("127.0.0.1")}}},
		Kube:  kube, ApproveCSRs: true, Timeout: 3 * time.Second, PollInterval: 100 * time.Millisecond,
		AssistedPort: 1, KubeletPort: 1,
		OnEvent: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, events
}

func TestApprovalSetsCondition(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(bootstrapCSR(t, "csr-1", "extra-worker-0"))
	res, _ := runApproving(t, kube)
	got, err := kube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "csr-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved ||
		got.Status.Conditions[0].Reason != ApprovedReason || !strings.Contains(got.Status.Conditions[0].Message, "new host extra-worker-0") {
		t.Fatalf("conditions: %+v", got.Status.Conditions)
	}
	if c := res.Hosts[0].CSRs; len(c) != 1 || c[0].Decision != "approved" || c[0].State != "Approved" {
		t.Fatalf("csrs: %+v", c)
	}
}

// When the API server refuses the approval (here: RBAC), the host is reported
// as blocked by that CSR, and the error is said once, not every round.
func TestApprovalRefusedByAPIServer(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(bootstrapCSR(t, "csr-1", "extra-worker-0"))
	kube.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "signers"}, "kubernetes.io/kube-apiserver-client-kubelet", nil)
	})
	res, events := runApproving(t, kube)
	if res.Outcome != OutcomeCSRBlocked || !strings.Contains(res.Hosts[0].Problem, "approving it failed") {
		t.Fatalf("outcome %s problem %q", res.Outcome, res.Hosts[0].Problem)
	}
	n := 0
	for _, e := range events {
		if strings.Contains(e.Message, "cannot approve client CSR csr-1") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d 'cannot approve' events, want 1", n)
	}
}

// The run's end may come while an approval is on its way (here: the API
// server's answer to the second attempt comes after Timeout): that cut
// attempt says nothing, so the host's outcome is still what the first,
// whole attempt learned, not "last stage reached: FirstCSRPending" (seen
// once in make test, where the end fell inside an attempt by chance).
func TestApprovalCutByTheEndKeepsWhatTheLastWholeAttemptSaid(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset(bootstrapCSR(t, "csr-1", "extra-worker-0"))
	attempts := 0
	kube.PrependReactor("update", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		attempts++ // the reactor runs in the monitor's one goroutine that approves
		if attempts > 1 {
			time.Sleep(4 * time.Second) // past runApproving's Timeout (3 s)
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "signers"}, "kubernetes.io/kube-apiserver-client-kubelet", nil)
	})
	res, _ := runApproving(t, kube)
	if attempts != 2 {
		t.Fatalf("%d approval attempts, want 2 (the second cut by the end)", attempts)
	}
	if res.Outcome != OutcomeCSRBlocked || !strings.Contains(res.Hosts[0].Problem, "approving it failed") {
		t.Fatalf("outcome %s problem %q", res.Outcome, res.Hosts[0].Problem)
	}
}

// A look-alike CSR (same node name, wrong requester) stays pending and is
// refused; once the host's own client CSR is approved, the refused one is
// listed among the host's CSRs but is not the host's outcome: the host is
// simply not Ready yet.
func TestRogueCSRNotTheHostsOutcome(t *testing.T) {
	t.Parallel()
	rogue := bootstrapCSR(t, "csr-rogue", "extra-worker-0")
	rogue.Spec.Username = "system:serviceaccount:default:mallory"
	rogue.Spec.Groups = []string{"system:serviceaccounts", "system:authenticated"}
	kube := fake.NewClientset(bootstrapCSR(t, "csr-1", "extra-worker-0"), rogue)
	res, _ := runApproving(t, kube)
	if res.Outcome == OutcomeCSRBlocked || strings.Contains(res.Hosts[0].Problem, "csr-rogue") {
		t.Fatalf("outcome %s problem %q: a refused look-alike became the host's outcome", res.Outcome, res.Hosts[0].Problem)
	}
	if res.Outcome != OutcomeTimeout {
		t.Fatalf("outcome %s, want Timeout (no Node yet)", res.Outcome)
	}
	decisions := map[string]string{}
	for _, c := range res.Hosts[0].CSRs {
		decisions[c.Name] = c.Decision
	}
	if decisions["csr-1"] != "approved" || decisions["csr-rogue"] != "refused" {
		t.Fatalf("decisions %v", decisions)
	}
	got, _ := kube.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "csr-rogue", metav1.GetOptions{})
	if len(got.Status.Conditions) != 0 {
		t.Fatalf("rogue CSR was acted on: %+v", got.Status.Conditions)
	}
}

// Without an approved CSR of its own, a refused CSR claiming the host is
// still what holds it back.
func TestRefusedCSRBlocksWhenHostHasNoneApproved(t *testing.T) {
	t.Parallel()
	rogue := bootstrapCSR(t, "csr-rogue", "extra-worker-0")
	rogue.Spec.Username = "system:serviceaccount:default:mallory"
	res, _ := runApproving(t, fake.NewClientset(rogue))
	if res.Outcome != OutcomeCSRBlocked || !strings.Contains(res.Hosts[0].Problem, "csr-rogue") {
		t.Fatalf("outcome %s problem %q", res.Outcome, res.Hosts[0].Problem)
	}
}
