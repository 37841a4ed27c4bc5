package restore

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
)

func localAuthObj(t *testing.T, ns string, k *auth.KeyPair) *unstructured.Unstructured {
	t.Helper()
	priv, pub, err := k.PEM()
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": auth.LocalAuthSecretName, "namespace": ns},
		"data":     map[string]any{auth.KeyECPrivate: base64.StdEncoding.EncodeToString(priv), auth.KeyECPublic: base64.StdEncoding.EncodeToString(pub)}}}
}

func TestTakeNodeZeroKey(t *testing.T) {
	k, _ := auth.GenerateKeyPair()
	other, _ := auth.GenerateKeyPair()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "demo"}}}
	newRunner := func() *runner { return &runner{res: &Result{}, log: slog.New(slog.DiscardHandler)} }

	r := newRunner()
	out, err := r.takeNodeZeroKey([]*unstructured.Unstructured{cm, localAuthObj(t, "mce", k)})
	if err != nil || len(out) != 1 || out[0] != cm || !r.nodeZeroKey.Equal(k) {
		t.Fatalf("out=%d key=%v err=%v", len(out), r.nodeZeroKey != nil, err)
	}

	r = newRunner()
	if out, err := r.takeNodeZeroKey([]*unstructured.Unstructured{cm}); err != nil || len(out) != 1 || r.nodeZeroKey != nil {
		t.Fatalf("no Secret: out=%d key=%v err=%v", len(out), r.nodeZeroKey != nil, err)
	}

	r = newRunner()
	_, err = r.takeNodeZeroKey([]*unstructured.Unstructured{localAuthObj(t, "a", k), localAuthObj(t, "b", other)})
	var bce *BundleContentError
	if !errors.As(err, &bce) {
		t.Fatalf("two different keys: err = %v", err)
	}

	broken := localAuthObj(t, "mce", k)
	_ = unstructured.SetNestedField(broken.Object, base64.StdEncoding.EncodeToString([]byte("not pem")), "data", auth.KeyECPublic)
	if _, err := newRunner().takeNodeZeroKey([]*unstructured.Unstructured{broken}); !errors.As(err, &bce) {
		t.Fatalf("broken key: err = %v", err)
	}
}
