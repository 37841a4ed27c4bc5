package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// State of a phase in the journal.
type State string

// Phase states.
const (
	StateRunning State = "running" // started; a kill left it unfinished
	StateDone    State = "done"
	StateFailed  State = "failed" // the phase returned an error (see Record.Error)
)

// Counts are what a phase did ("rows": 1200, "objects": 14, ...).
type Counts map[string]int64

// Record is one phase's entry in the journal.
type Record struct {
	State      State     `json:"state"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Counts     Counts    `json:"counts,omitempty"`
	// Error is why a failed phase failed. Restore errors never hold secrets.
	Error string `json:"error,omitempty"`
}

// FingerprintMismatchError means the journal was written by a restore of the
// same bundle with different options; resuming it would mix two restores.
type FingerprintMismatchError struct{ Name string }

func (e *FingerprintMismatchError) Error() string {
	return fmt.Sprintf("journal %s was written by a restore of this bundle with different options: rerun with the same options, or delete the journal to start over", e.Name)
}

// Journal is the journal ConfigMap of one bundle digest.
type Journal struct {
	c      kubernetes.Interface
	ns     string
	name   string
	digest string
	cm     *corev1.ConfigMap
	// db, when set, keeps the journal in the target database instead (cm
	// then only holds the data).
	db *DB
}

// Open reads the journal of digest in namespace ns, creating it when absent.
// fingerprint identifies the restore's options (empty: not checked); a journal
// written with another one is refused with a *FingerprintMismatchError.
func Open(ctx context.Context, c kubernetes.Interface, ns, digest, fingerprint string) (*Journal, error) {
	name, err := JournalName(digest)
	if err != nil {
		return nil, err
	}
	j := &Journal{c: c, ns: ns, name: name, digest: digest}
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(RoleJournal, digest),
				Annotations: map[string]string{AnnotationDigest: digest}},
			Data: map[string]string{KeyBundleDigest: digest, KeyFingerprint: fingerprint},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cm, err = cms.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open journal %s/%s: %w", ns, name, err)
	}
	if cm.Data[KeyBundleDigest] != digest {
		return nil, fmt.Errorf("journal %s/%s belongs to bundle %q", ns, name, cm.Data[KeyBundleDigest])
	}
	if fingerprint != "" && cm.Data[KeyFingerprint] != "" && cm.Data[KeyFingerprint] != fingerprint {
		return nil, &FingerprintMismatchError{Name: ns + "/" + name}
	}
	j.cm = cm
	return j, nil
}

// Name is the journal ConfigMap's name.
func (j *Journal) Name() string { return j.name }

// Record returns a phase's entry as last read or written.
func (j *Journal) Record(phase string) (Record, bool) {
	raw, ok := j.cm.Data[KeyPhasePrefix+phase]
	if !ok {
		return Record{}, false
	}
	var r Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Record{}, false // a damaged entry counts as not done
	}
	return r, true
}

// Done reports whether a phase is recorded as done.
func (j *Journal) Done(phase string) bool {
	r, ok := j.Record(phase)
	return ok && r.State == StateDone
}

// Put writes a phase's entry, retrying on concurrent updates.
func (j *Journal) Put(ctx context.Context, phase string, r Record) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if j.db != nil {
		data := map[string]string{}
		for k, v := range j.cm.Data {
			data[k] = v
		}
		data[KeyPhasePrefix+phase] = string(raw)
		if err := j.db.put(ctx, j.name, RoleJournal, data); err != nil {
			return fmt.Errorf("record phase %s: %w", phase, err)
		}
		j.cm.Data = data
		return nil
	}
	cms := j.c.CoreV1().ConfigMaps(j.ns)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := j.cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[KeyPhasePrefix+phase] = string(raw)
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err == nil {
			j.cm = updated
			return nil
		}
		if apierrors.IsConflict(err) {
			// Someone else wrote the journal: retry on top of what they wrote.
			fresh, gerr := cms.Get(ctx, j.name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			j.cm = fresh
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record phase %s in journal %s/%s: %w", phase, j.ns, j.name, err)
	}
	return nil
}
