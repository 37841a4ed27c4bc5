package monitor

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/csr"
)

// ApprovedReason is the reason of the Approved condition the monitor sets, so
// an audit (kubectl get csr -o yaml) shows who approved and why.
const ApprovedReason = "KubectlAssistedAddNodesMonitor"

// approve sets the Approved condition on a CSR through the certificates/v1
// approval subresource. It sends the object it read (with its resourceVersion),
// so a CSR changed since the decision is refused by the API server.
func approve(ctx context.Context, kube kubernetes.Interface, obj *certificatesv1.CertificateSigningRequest, d csr.Decision, hostname string) error {
	if !d.Approve {
		return fmt.Errorf("CSR %s: refusing to approve a CSR the rules rejected", obj.Name)
	}
	c := obj.DeepCopy()
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         ApprovedReason,
		Message:        ApprovalMessage(d.Request, hostname),
		LastUpdateTime: metav1.Now(),
	})
	if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approve CSR %s: %w", c.Name, err)
	}
	return nil
}

// ApprovalMessage says what was verified, for the condition's message.
func ApprovalMessage(r *csr.Request, hostname string) string {
	what := "client certificate"
	if r.Kind == csr.KindServing {
		what = "serving certificate"
	}
	return fmt.Sprintf("kubelet %s of new host %s from nodes-config.yaml, approved by kubectl assisted add-nodes monitor: requester %s, CN %s, O system:nodes, usages %v, key %s verified",
		what, hostname, r.Username, r.CommonName, r.Usages, r.KeyDescription())
}
