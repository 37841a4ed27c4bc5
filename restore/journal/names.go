package journal

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Names, labels, annotations and keys of the journal and receipt ConfigMaps.
const (
	JournalPrefix = "kubectl-assisted-journal-"
	ReceiptPrefix = "kubectl-assisted-receipt-"

	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedBy        = "kubectl-assisted"
	LabelRole        = "kubectl-assisted.io/role"
	RoleJournal      = "restore-journal"
	RoleReceipt      = "restore-receipt"
	LabelDigest      = "kubectl-assisted.io/bundle-digest"
	AnnotationDigest = "kubectl-assisted.io/bundle-digest"

	KeyBundleDigest  = "bundleDigest"
	KeyFingerprint   = "fingerprint"
	KeyPhasePrefix   = "phase."
	KeyFormatVersion = "formatVersion"
	KeyPhases        = "phases"
	KeyStartedAt     = "startedAt"
	KeyCompletedAt   = "completedAt"
	KeyCounts        = "counts"

	// ReceiptFormatVersion is the receipt's format; readers refuse other majors.
	ReceiptFormatVersion = "1"
)

var digestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-z0-9]+):([a-f0-9]{32,128})$`) })

// parseDigest splits an OCI digest ("sha256:<hex>").
func parseDigest(d string) (alg, hex string, err error) {
	m := digestRE().FindStringSubmatch(d)
	if m == nil {
		return "", "", fmt.Errorf("invalid bundle digest %q: want <algorithm>:<lower-case hex>", d)
	}
	return m[1], m[2], nil
}

// JournalName is the journal ConfigMap's name for a bundle digest.
func JournalName(digest string) (string, error) {
	alg, hex, err := parseDigest(digest)
	if err != nil {
		return "", err
	}
	return JournalPrefix + alg + "-" + hex, nil
}

// ReceiptName is the receipt ConfigMap's name for a bundle digest.
func ReceiptName(digest string) (string, error) {
	alg, hex, err := parseDigest(digest)
	if err != nil {
		return "", err
	}
	return ReceiptPrefix + alg + "-" + hex, nil
}

// digestLabel fits a digest into a label value (63 characters at most).
func digestLabel(digest string) string {
	v := strings.Replace(digest, ":", "-", 1)
	if len(v) > 50 {
		v = v[:50]
	}
	return v
}

func labels(role, digest string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRole: role, LabelDigest: digestLabel(digest)}
}
