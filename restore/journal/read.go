package journal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrNoJournal means no restore of that bundle has started in the namespace.
var ErrNoJournal = errors.New("no restore journal")

// Peek reads the journal of digest without creating it (for watchers such as
// wait-for); an error wrapping ErrNoJournal when there is none.
func Peek(ctx context.Context, c kubernetes.Interface, ns, digest string) (*Journal, error) {
	name, err := JournalName(digest)
	if err != nil {
		return nil, err
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w for bundle %s in namespace %s", ErrNoJournal, digest, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s/%s: %w", ns, name, err)
	}
	return &Journal{c: c, ns: ns, name: name, digest: digest, cm: cm}, nil
}

// Phases returns every phase recorded in the journal, by name.
func (j *Journal) Phases() map[string]Record {
	out := map[string]Record{}
	for k := range j.cm.Data {
		if name, ok := strings.CutPrefix(k, KeyPhasePrefix); ok {
			if r, ok := j.Record(name); ok {
				out[name] = r
			}
		}
	}
	return out
}

// Failed returns the phase recorded as failed, if any.
func (j *Journal) Failed() (string, Record, bool) {
	phases := j.Phases()
	names := make([]string, 0, len(phases))
	for n := range phases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if phases[n].State == StateFailed {
			return n, phases[n], true
		}
	}
	return "", Record{}, false
}

// ReceiptDigests lists the bundle digests that have a receipt in namespace ns.
func ReceiptDigests(ctx context.Context, c kubernetes.Interface, ns string) ([]string, error) {
	list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleReceipt})
	if err != nil {
		return nil, fmt.Errorf("list receipts in %s: %w", ns, err)
	}
	var out []string
	for _, cm := range list.Items {
		if d := cm.Data[KeyBundleDigest]; d != "" {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out, nil
}
