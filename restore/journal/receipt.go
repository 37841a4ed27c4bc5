package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Receipt says a bundle's restore finished; `wait-for restore-complete` reads it.
type Receipt struct {
	BundleDigest string            `json:"bundleDigest"`
	Phases       []string          `json:"phases"`
	StartedAt    time.Time         `json:"startedAt"`
	CompletedAt  time.Time         `json:"completedAt"`
	Counts       map[string]Counts `json:"counts"`
}

// ErrNoReceipt means the restore of that bundle has not completed (yet).
var ErrNoReceipt = errors.New("no restore receipt")

// Receipt builds the receipt from the journal once every phase is done.
func (j *Journal) Receipt(phases []Phase, completed time.Time) (Receipt, error) {
	if !j.AllDone(phases) {
		return Receipt{}, errNotDone
	}
	r := Receipt{BundleDigest: j.digest, CompletedAt: completed.UTC(), Counts: map[string]Counts{}}
	for _, p := range phases {
		rec, _ := j.Record(p.Name)
		r.Phases = append(r.Phases, p.Name)
		if len(rec.Counts) > 0 {
			r.Counts[p.Name] = rec.Counts
		}
		if r.StartedAt.IsZero() || rec.StartedAt.Before(r.StartedAt) {
			r.StartedAt = rec.StartedAt.UTC()
		}
	}
	return r, nil
}

// WriteReceipt creates (or replaces) the receipt ConfigMap in namespace ns.
func WriteReceipt(ctx context.Context, c kubernetes.Interface, ns string, r Receipt) error {
	name, err := ReceiptName(r.BundleDigest)
	if err != nil {
		return err
	}
	data, err := receiptData(r)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(RoleReceipt, r.BundleDigest),
			Annotations: map[string]string{AnnotationDigest: r.BundleDigest}},
		Data: data,
	}
	cms := c.CoreV1().ConfigMaps(ns)
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := cms.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("write receipt %s/%s: %w", ns, name, gerr)
		}
		cm.ResourceVersion = cur.ResourceVersion
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write receipt %s/%s: %w", ns, name, err)
	}
	return nil
}

// receiptData is a receipt as ConfigMap (or database row) data.
func receiptData(r Receipt) (map[string]string, error) {
	counts, err := json.Marshal(r.Counts)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		KeyBundleDigest:  r.BundleDigest,
		KeyFormatVersion: ReceiptFormatVersion,
		KeyPhases:        strings.Join(r.Phases, ","),
		KeyStartedAt:     r.StartedAt.UTC().Format(time.RFC3339),
		KeyCompletedAt:   r.CompletedAt.UTC().Format(time.RFC3339),
		KeyCounts:        string(counts),
	}, nil
}

// ReadReceipt returns the receipt of digest in namespace ns, or an error
// wrapping ErrNoReceipt when there is none.
func ReadReceipt(ctx context.Context, c kubernetes.Interface, ns, digest string) (Receipt, error) {
	name, err := ReceiptName(digest)
	if err != nil {
		return Receipt{}, err
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Receipt{}, fmt.Errorf("%w for bundle %s in namespace %s", ErrNoReceipt, digest, ns)
	}
	if err != nil {
		return Receipt{}, fmt.Errorf("read receipt %s/%s: %w", ns, name, err)
	}
	return parseReceipt(cm)
}

func parseReceipt(cm *corev1.ConfigMap) (Receipt, error) {
	d := cm.Data
	bad := func(what string) (Receipt, error) {
		return Receipt{}, fmt.Errorf("receipt %s/%s: %s", cm.Namespace, cm.Name, what)
	}
	if v := d[KeyFormatVersion]; strings.SplitN(v, ".", 2)[0] != ReceiptFormatVersion {
		return bad(fmt.Sprintf("format version %q is not supported (want %s)", v, ReceiptFormatVersion))
	}
	r := Receipt{BundleDigest: d[KeyBundleDigest], Counts: map[string]Counts{}}
	if r.BundleDigest == "" {
		return bad("no bundle digest")
	}
	if p := d[KeyPhases]; p != "" {
		r.Phases = strings.Split(p, ",")
	}
	var err error
	if r.StartedAt, err = time.Parse(time.RFC3339, d[KeyStartedAt]); err != nil {
		return bad("bad " + KeyStartedAt)
	}
	if r.CompletedAt, err = time.Parse(time.RFC3339, d[KeyCompletedAt]); err != nil {
		return bad("bad " + KeyCompletedAt)
	}
	if c := d[KeyCounts]; c != "" {
		if err := json.Unmarshal([]byte(c), &r.Counts); err != nil {
			return bad("bad " + KeyCounts)
		}
	}
	return r, nil
}
