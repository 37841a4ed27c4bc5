package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// HandoverSecret is where migrate leaves the token it minted for the
// assisted-installer-controller (key HandoverTokenKey), in the restore's
// namespace; `switchover` reads it from there.
const (
	HandoverSecret   = "kubectl-assisted-handover"
	HandoverTokenKey = "controller-token"
)

// waitStep waits until cluster 0 holds the receipt of exactly this bundle.
type waitStep struct{}

func (waitStep) name() string { return StepWait }

func (waitStep) run(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	rec, err := o.Cluster.WaitReceipt(ctx, o.Namespace, st.Digest, func(msg string) { m.note(StepWait, "%s", msg) })
	if err != nil {
		if errors.Is(err, waitfor.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			hint := "Run the same command again to keep waiting."
			if !o.Direct() {
				hint = fmt.Sprintf("Look at the Job: kubectl -n %s logs job/%s --all-containers; then run the same command again to keep waiting.", o.Namespace, job.JobName(st.Digest))
			}
			return "", hinted(fmt.Errorf("no receipt for %s on cluster 0 after %s", st.Digest, o.Timeout), hint)
		}
		return "", err
	}
	return fmt.Sprintf("receipt for %s with phases %s", rec.BundleDigest, strings.Join(rec.Phases, ",")), nil
}

// serviceStep creates the AgentServiceConfig now that the receipt exists;
// the PVCs the operator will use must already have its sizes.
type serviceStep struct{}

func (serviceStep) name() string { return StepService }

func (serviceStep) run(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	a := o.AgentServiceConfig
	if a == nil {
		return skippedPrefix + "no --agent-service-config; the restore is complete, create the AgentServiceConfig now", nil
	}
	for _, pvc := range []struct {
		name string
		want resource.Quantity
	}{{job.DatabasePVC, a.DatabaseSize}, {job.FilesystemPVC, a.FilesystemSize}} {
		got, found, err := o.Cluster.PVCSize(ctx, o.Namespace, pvc.name)
		if err != nil {
			return "", err
		}
		if found && got.Cmp(pvc.want) != 0 {
			return "", hinted(fmt.Errorf("PVC %s/%s requests %s but the AgentServiceConfig asks for %s", o.Namespace, pvc.name, got.String(), pvc.want.String()),
				"Make the AgentServiceConfig's storage requests equal the PVCs' (the operator cannot shrink a PVC).")
		}
	}
	if err := o.Cluster.Apply(ctx, []runtime.Object{a.Object.DeepCopy()}, st.Digest); err != nil {
		return "", err
	}
	return "created AgentServiceConfig " + ASCName + " after the receipt", nil
}

// switchoverStep mints the controller's token with cluster 0's local-auth
// key and points the assisted-installer-controller at the service.
type switchoverStep struct{}

func (switchoverStep) name() string { return StepSwitchover }

func (switchoverStep) run(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	if o.ServiceURL == "" {
		return skippedPrefix + "no --service-url; run 'switchover --service-url URL' when it is known", nil
	}
	id := o.ClusterID
	if id == "" {
		ids := st.ClusterIDs
		if len(ids) == 0 && o.Direct() {
			var err error
			if ids, err = o.DB.ClusterIDs(ctx, o.TargetDB); err != nil {
				return "", fmt.Errorf("cluster 0's database: %w", err)
			}
		}
		if len(ids) != 1 {
			return "", hinted(fmt.Errorf("the bundle holds %d clusters (%s): which one is cluster 0?", len(ids), strings.Join(ids, ", ")),
				"Give --cluster-id with cluster 0's id.")
		}
		id = ids[0]
	}
	kp, err := o.Cluster.LocalAuthKey(ctx, o.Namespace)
	if err != nil {
		return "", fmt.Errorf("cluster 0's local auth key: %w", err)
	}
	tok, err := kp.MintClusterToken(id, auth.MintOptions{})
	if err != nil {
		return "", err
	}
	if err := o.Cluster.Apply(ctx, []runtime.Object{handoverSecret(o.Namespace, tok.Reveal())}, st.Digest); err != nil {
		return "", err
	}
	pub, err := kp.PublicPEM()
	if err != nil {
		return "", err
	}
	// A controller token that already verifies on cluster 0 (node 0's key
	// was carried in the bundle) is kept.
	res, err := o.Cluster.Switchover(ctx, switchover.Options{Namespace: o.ControllerNamespace, ServiceURL: o.ServiceURL,
		Token: tok.Reveal(), CACertPath: o.CACertPath, LocalAuthPublicKey: pub})
	if errors.Is(err, switchover.ErrControllerNotFound) {
		return skippedPrefix + "no assisted-installer-controller on cluster 0, nothing to switch (token left in Secret " + HandoverSecret + ")", nil
	}
	if err != nil {
		return "", err
	}
	kept := ""
	if res.TokenKept {
		kept = ", its token kept: it verifies on cluster 0"
	}
	return fmt.Sprintf("controller switched to %s (%d change(s), %d pod(s) restarted%s)", o.ServiceURL, len(res.Changes), len(res.RestartedPods), kept), nil
}

// handoverSecret leaves the controller's token where `switchover` finds it.
func handoverSecret(ns, token string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: HandoverSecret, Namespace: ns, Labels: map[string]string{job.ManagedByLabel: job.ManagedBy}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{HandoverTokenKey: []byte(token)},
	}
}
