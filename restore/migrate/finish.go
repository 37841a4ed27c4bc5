package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
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
	onStatus := func(msg string) { m.note(StepWait, "%s", msg) }
	var rec *journal.Receipt
	var err error
	if o.Direct() {
		rec, err = o.Cluster.WaitReceipt(ctx, o.Namespace, st.Digest, onStatus)
	} else {
		rec, err = m.waitForJob(ctx, onStatus)
	}
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

// jobPollInterval is how often the wait looks at the restore Job (one GET).
var jobPollInterval = 500 * time.Millisecond

// errReceived ends the Job's watch once the receipt is there.
var errReceived = errors.New("receipt received")

// waitForJob waits for the receipt while watching the restore Job: a Job
// that failed (its retries used up, or a refusal no retry changes) never
// writes the receipt, so the wait ends then, with its reason.
func (m *migration) waitForJob(ctx context.Context, onStatus func(string)) (*journal.Receipt, error) {
	o, st := m.o, m.state
	name := job.JobName(st.Digest)
	g, gctx := errgroup.WithContext(ctx)
	var rec *journal.Receipt
	g.Go(func() error {
		r, err := o.Cluster.WaitReceipt(gctx, o.Namespace, st.Digest, onStatus)
		if err != nil {
			return err
		}
		rec = r
		return errReceived
	})
	g.Go(func() error {
		for {
			js, err := o.Cluster.JobState(gctx, o.Namespace, name)
			if err == nil && js.Failed {
				return m.jobFailed(js)
			}
			select {
			case <-gctx.Done():
				return nil
			case <-time.After(jobPollInterval):
			}
		}
	})
	err := g.Wait()
	var jf *jobFailedError
	if errors.As(err, &jf) {
		// The next run applies the Job again.
		delete(st.Steps, StepRestore)
		return nil, jf.err
	}
	if !errors.Is(err, errReceived) {
		return nil, err
	}
	// The receipt is written before the Job ends: its PostgreSQL still
	// shuts down (a smart shutdown, ending with a checkpoint). The operator
	// must not start PostgreSQL on the same volume before that is over.
	noted := false
	for {
		js, err := o.Cluster.JobState(ctx, o.Namespace, name)
		switch {
		case err != nil:
			return nil, err
		case js.Complete || !js.Found:
			return rec, nil
		case js.Failed:
			err := m.jobFailed(js)
			return nil, err.err
		}
		if !noted {
			onStatus("restored; the Job's PostgreSQL is shutting down (its checkpoint)")
			noted = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(jobPollInterval):
		}
	}
}

type jobFailedError struct{ err error }

func (e *jobFailedError) Error() string { return e.err.Error() }

// jobFailed is the error of a failed restore Job.
func (m *migration) jobFailed(js JobState) *jobFailedError {
	name := job.JobName(m.state.Digest)
	return &jobFailedError{err: hinted(fmt.Errorf("the restore Job %s/%s failed: %s", m.o.Namespace, name, js.Reason),
		fmt.Sprintf("Fix the cause and run the same command again: it replaces the failed Job. Its logs: kubectl -n %s logs job/%s --all-containers", m.o.Namespace, name))}
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
