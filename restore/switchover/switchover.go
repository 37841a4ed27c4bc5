// Package switchover points the clients that outlive node 0 at cluster 0's
// assisted-service: the assisted-installer-controller Job reads its service URL
// from a ConfigMap and its token from a Secret at start, so both are patched and
// its pods restarted. It also serves redirects from the old address until node 0
// reboots.
//
// The object names and keys follow assisted-installer's deploy templates
// (deploy/assisted-installer-controller/*.template in openshift/assisted-installer).
package switchover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
)

// Names of the assisted-installer-controller's objects on the installed cluster.
const (
	DefaultNamespace = "assisted-installer"
	ConfigMapName    = "assisted-installer-controller-config"
	SecretName       = "assisted-installer-controller-secret"
	// PodSelector selects the controller Job's pods.
	PodSelector = "app=assisted-installer-controller"

	KeyInventoryURL         = "inventory-url"
	KeyClusterID            = "cluster-id"
	KeyCACertPath           = "ca-cert-path"
	KeySkipCertVerification = "skip-cert-verification"
	KeyToken                = "pull-secret-token"
)

// Options says where the controller should point from now on.
type Options struct {
	// Namespace of the controller (DefaultNamespace when empty).
	Namespace string
	// ServiceURL is cluster 0's assisted-service base URL (https://host[:port]).
	ServiceURL string
	// Token authenticates the controller to the new service (minted by the restore
	// with the cluster_id claim). Empty keeps the current token.
	Token string
	// CACertPath is a path on the control-plane hosts holding the CA that signs
	// the new service's certificate; empty keeps the current setting.
	CACertPath string
	// SkipCertVerification, when set, overrides the controller's TLS verification.
	SkipCertVerification *bool
	// NoRestart leaves the running pods alone (they keep the old URL until they
	// restart on their own).
	NoRestart bool
	// DryRun computes the changes without making them.
	DryRun bool
	// LocalAuthPublicKey is cluster 0's local-auth public key (PEM). When set,
	// a current controller token that cluster 0's service accepts (it was
	// signed with node 0's key, which the restore carried over) is kept and
	// Token is not written; RotateToken writes Token anyway.
	LocalAuthPublicKey []byte
	RotateToken        bool
	// Now is the clock for token checks (default time.Now).
	Now func() time.Time
}

// Change is one field that was (or, in a dry run, would be) changed. Values of
// secret fields are never recorded.
type Change struct {
	Object string `json:"object"`
	Key    string `json:"key"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
}

// Result is what Run did.
type Result struct {
	ServiceURL    string   `json:"serviceURL"`
	Changes       []Change `json:"changes"`
	RestartedPods []string `json:"restartedPods,omitempty"`
	DryRun        bool     `json:"dryRun,omitempty"`
	// TokenKept is true when the controller's token verifies on cluster 0 and
	// was left as it is.
	TokenKept bool `json:"tokenKept,omitempty"`
}

// ErrControllerNotFound is returned when the controller's ConfigMap does not exist:
// the cluster has no assisted-installer-controller to switch (already finished
// and cleaned up, or not an assisted installation).
var ErrControllerNotFound = errors.New("assisted-installer-controller not found")

// Validate checks the options.
func (o *Options) Validate() error {
	u, err := url.Parse(o.ServiceURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("service URL %q must be an absolute http(s) URL", o.ServiceURL)
	}
	return nil
}

// Run patches the controller's ConfigMap and Secret and restarts its pods. It is
// idempotent: a second run with the same options changes nothing.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	res := &Result{ServiceURL: o.ServiceURL, DryRun: o.DryRun}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: no ConfigMap %s/%s", ErrControllerNotFound, ns, ConfigMapName)
	}
	if err != nil {
		return nil, fmt.Errorf("read controller config: %w", err)
	}
	want := map[string]string{KeyInventoryURL: o.ServiceURL}
	if o.CACertPath != "" {
		want[KeyCACertPath] = o.CACertPath
	}
	if o.SkipCertVerification != nil {
		want[KeySkipCertVerification] = fmt.Sprint(*o.SkipCertVerification)
	}
	cmChanged := false
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if cm.Data[k] != want[k] {
			res.Changes = append(res.Changes, Change{Object: "ConfigMap/" + ConfigMapName, Key: k, From: cm.Data[k], To: want[k]})
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k] = want[k]
			cmChanged = true
		}
	}

	var secret *corev1.Secret
	secretExists := true
	if o.Token != "" {
		secret, err = cs.CoreV1().Secrets(ns).Get(ctx, SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secretExists = false
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: ns,
				Labels: map[string]string{"app": "assisted-installer-controller"}}, Type: corev1.SecretTypeOpaque}
		case err != nil:
			return nil, fmt.Errorf("read controller secret: %w", err)
		}
		cur := string(secret.Data[KeyToken])
		if secretExists && cur != "" && cur != o.Token && !o.RotateToken && len(o.LocalAuthPublicKey) > 0 {
			now := time.Now
			if o.Now != nil {
				now = o.Now
			}
			if _, _, err := auth.LocalAuthClaim(o.LocalAuthPublicKey, cur, now()); err == nil {
				res.TokenKept = true
				secret = nil
			}
		}
		switch {
		case secret == nil:
		case cur != o.Token:
			// The token's value never enters the result.
			res.Changes = append(res.Changes, Change{Object: "Secret/" + SecretName, Key: KeyToken, To: "(new token)"})
		default:
			secret = nil
		}
	}

	if o.DryRun {
		return res, nil
	}
	if cmChanged {
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-assisted"}); err != nil {
			return nil, fmt.Errorf("update controller config: %w", err)
		}
	}
	if secret != nil {
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[KeyToken] = []byte(o.Token)
		secret.StringData = nil
		if !secretExists {
			_, err = cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{FieldManager: "kubectl-assisted"})
		} else {
			_, err = cs.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{FieldManager: "kubectl-assisted"})
		}
		if err != nil {
			return nil, fmt.Errorf("write controller token: %w", err)
		}
	}
	if o.NoRestart || len(res.Changes) == 0 {
		return res, nil
	}
	// Env comes from the ConfigMap and Secret at container start: delete the pods
	// so the Job starts new ones that read the new values.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: PodSelector})
	if err != nil {
		return nil, fmt.Errorf("list controller pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("restart controller pod %s: %w", p.Name, err)
		}
		res.RestartedPods = append(res.RestartedPods, p.Name)
	}
	return res, nil
}
