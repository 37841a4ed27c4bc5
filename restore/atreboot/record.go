package atreboot

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/restore/internal/atomicfile"
)

// Outcome is how a hold ended.
type Outcome string

// Outcomes.
const (
	// OutcomeMigrated: the migration completed (auto) or the receipt of the
	// migrated bundle is on cluster 0 (manual).
	OutcomeMigrated Outcome = "migrated"
	// OutcomePushed: the migration did not complete in time, but the bundle
	// is in the registry; the record says what to run to finish.
	OutcomePushed Outcome = "bundle-in-registry"
	// OutcomeNotPushed: not even the bundle reached the registry before the
	// hard limit: node 0's state is lost with the reboot.
	OutcomeNotPushed Outcome = "bundle-not-in-registry"
	// OutcomeNotShutdown: the unit was stopped outside a shutdown; nothing
	// ran.
	OutcomeNotShutdown Outcome = "not-a-shutdown"
	// OutcomeDisarmed: nothing is armed any more.
	OutcomeDisarmed Outcome = "disarmed"
)

// Record is what a hold leaves when the migration did not complete: in the
// journal, in the migration's state directory on node 0 and, when cluster 0
// answers, as a ConfigMap there. It holds no secret.
type Record struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	Outcome     Outcome   `json:"outcome"`
	Mode        Mode      `json:"mode"`
	Node        string    `json:"node,omitempty"`
	Time        time.Time `json:"time"`
	HeldSeconds float64   `json:"heldSeconds"`
	Attempts    int       `json:"attempts"`
	Reference   string    `json:"reference"`
	// Digest and Pinned name the bundle in the registry (empty: not pushed).
	Digest    string `json:"digest,omitempty"`
	Pinned    string `json:"pinned,omitempty"`
	Namespace string `json:"namespace"`
	Target    string `json:"target"`
	// Steps are the migration's steps as its state recorded them.
	Steps     map[string]string `json:"steps,omitempty"`
	LastError string            `json:"lastError,omitempty"`
	// StateDir is the migration's --state-dir on node 0; RunDir is this
	// migration's directory in it, which holds the bundle's age identity and
	// the signing key pair a later migrate needs.
	StateDir string `json:"stateDir"`
	RunDir   string `json:"runDir,omitempty"`
	// Next says what to do, in order.
	Next []string `json:"next"`
	// FinishCommand is the migrate command that finishes the migration from
	// any machine with a copy of StateDir (the node-0 source flags left out:
	// the bundle is pushed).
	FinishCommand []string `json:"finishCommand,omitempty"`
}

// RecordAPIVersion and RecordKind name the record's format.
const (
	RecordAPIVersion = "kubectl-assisted.io/v1alpha1"
	RecordKind       = "AtRebootRecord"
)

// Summary is the record in a few lines, for the journal and the ConfigMap.
func (r *Record) Summary() string {
	var b strings.Builder
	switch r.Outcome {
	case OutcomePushed:
		fmt.Fprintf(&b, "node 0's migration did not complete before its reboot (after %d attempt(s) in %.0fs); the bundle is in the registry: %s\n",
			r.Attempts, r.HeldSeconds, r.Pinned)
	case OutcomeNotPushed:
		fmt.Fprintf(&b, "node 0's migration did not complete and its bundle did not reach the registry before the reboot (%d attempt(s) in %.0fs): node 0's state is lost\n",
			r.Attempts, r.HeldSeconds)
	default:
		fmt.Fprintf(&b, "node 0's migration: %s\n", r.Outcome)
	}
	if r.LastError != "" {
		fmt.Fprintf(&b, "last error: %s\n", r.LastError)
	}
	for i, n := range r.Next {
		fmt.Fprintf(&b, "%d. %s\n", i+1, n)
	}
	return b.String()
}

// WriteRecordFile writes the record (0600) into dir, the migration's run
// directory, and returns its path.
func WriteRecordFile(dir string, r *Record) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, RecordFile)
	return p, atomicfile.Write(p, append(data, '\n'), 0o600)
}

// WriteRecordConfigMap creates or replaces the record ConfigMap in ns.
func WriteRecordConfigMap(ctx context.Context, cs kubernetes.Interface, ns string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: RecordConfigMap, Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-assisted"}},
		Data: map[string]string{"record.json": string(data), "summary": r.Summary()},
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	cur, err := cms.Get(ctx, RecordConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	case err == nil:
		cur.Labels, cur.Data = cm.Labels, cm.Data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	return err
}
