package fakehost

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Signers and the node-bootstrapper identity, as kubelets use them.
const (
	SignerClient  = "kubernetes.io/kube-apiserver-client-kubelet"
	SignerServing = "kubernetes.io/kubelet-serving"
)

// CSR describes an x509 certificate request and the CSR object carrying it.
type CSR struct {
	Name   string
	Signer string
	CN     string
	Org    []string
	OU     []string
	DNS    []string
	IPs    []string
	Usages []string
	// Key signs the request; nil means a fresh ECDSA P-256 key, as kubelets use.
	Key crypto.Signer
}

// ClientCSR is the CSR a kubelet's bootstrap sends for its client certificate.
func ClientCSR(name, node string) CSR {
	return CSR{Name: name, Signer: SignerClient, CN: "system:node:" + node, Org: []string{"system:nodes"},
		Usages: []string{"digital signature", "client auth"}}
}

// ServingCSR is the CSR a kubelet sends for its serving certificate.
func ServingCSR(name, node string, ips ...string) CSR {
	return CSR{Name: name, Signer: SignerServing, CN: "system:node:" + node, Org: []string{"system:nodes"},
		DNS: []string{node}, IPs: ips, Usages: []string{"digital signature", "server auth"}}
}

// Create creates the CSR in the API server as the identity of cfg (for
// example the node-bootstrapper or system:node:<name>), so the API server
// records that identity as the requester.
func (c CSR) Create(t testing.TB, cfg *rest.Config) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key := c.Key
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		key = k
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: c.CN, Organization: c.Org, OrganizationalUnit: c.OU},
		DNSNames: c.DNS,
	}
	for _, s := range c.IPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(s))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatalf("x509 request %s: %v", c.Name, err)
	}
	obj := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: c.Signer,
		},
	}
	for _, u := range c.Usages {
		obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.KeyUsage(u))
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CSR %s: %v", c.Name, err)
	}
	return out
}

// AllowCSRCreation binds the built-in system:node-bootstrapper ClusterRole
// (create/get/list/watch CSRs) to the given users and to group system:nodes,
// which a real cluster grants through the node authorizer and its own bindings.
func AllowCSRCreation(t testing.TB, admin kubernetes.Interface, name string, users ...string) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:nodes"}},
	}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: u})
	}
	ctx := context.Background()
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = admin.RbacV1().ClusterRoleBindings().Update(ctx, b, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// CreateNode registers a Node as its kubelet would (here as admin: no kubelet
// runs), with InternalIP addresses and a NotReady condition.
func CreateNode(t testing.TB, admin kubernetes.Interface, name string, ips ...string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	ctx := context.Background()
	created, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	for _, ip := range ips {
		created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	SetNodeReady(t, admin, created, false)
}

// SetNodeReady sets the Node's Ready condition through the status subresource.
func SetNodeReady(t testing.TB, admin kubernetes.Interface, n *corev1.Node, ready bool) {
	t.Helper()
	ctx := context.Background()
	if n.ResourceVersion == "" {
		var err error
		if n, err = admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st, reason := corev1.ConditionFalse, "KubeletNotReady"
	if ready {
		st, reason = corev1.ConditionTrue, "KubeletReady"
	}
	now := metav1.NewTime(time.Now())
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: st, Reason: reason, Message: "set by the test",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update Node %s status: %v", n.Name, err)
	}
}

// NodeReady marks an existing Node Ready.
func NodeReady(t testing.TB, admin kubernetes.Interface, name string) {
	t.Helper()
	SetNodeReady(t, admin, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, true)
}

// DeleteCSRsAtEnd removes the named CSRs when the test ends (they are
// cluster-scoped and the API server is shared by the test process).
func DeleteCSRsAtEnd(t testing.TB, admin kubernetes.Interface, names *[]string) {
	t.Cleanup(func() {
		for _, n := range *names {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
}

// Approved reports whether a CSR has the Approved condition, and its reason
// and message.
func Approved(t testing.TB, admin kubernetes.Interface, name string) (bool, string, string) {
	t.Helper()
	c, err := admin.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get CSR %s: %v", name, err)
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
			return true, cond.Reason, cond.Message
		}
	}
	return false, "", ""
}
