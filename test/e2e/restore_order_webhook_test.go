package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// orderWebhook is a validating admission webhook run by the test: the real
// kube-apiserver calls it for every CREATE of an object labelled
// kat-order=<id>. It records the order in which the API server admitted the
// creations and denies an object whose parents do not exist yet (the
// dependencies the restore order exists for).
type orderWebhook struct {
	dyn     dynamic.Interface
	mu      sync.Mutex
	created []string // "Kind/name", in admission order
	denied  []string
}

func (w *orderWebhook) Created() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.created...)
}

var gvrs = map[string]schema.GroupVersionResource{
	"ClusterImageSet":   {Group: "hive.openshift.io", Version: "v1", Resource: "clusterimagesets"},
	"ClusterDeployment": {Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"},
	"InfraEnv":          {Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"},
	"Secret":            {Version: "v1", Resource: "secrets"},
}

// missingParent names the first parent of obj that does not exist, or "".
func (w *orderWebhook) missingParent(ctx context.Context, obj *unstructured.Unstructured) string {
	ns := obj.GetNamespace()
	str := func(path ...string) string { s, _, _ := unstructured.NestedString(obj.Object, path...); return s }
	type parent struct{ kind, ns, name string }
	var parents []parent
	switch obj.GetKind() {
	case "ClusterDeployment":
		parents = append(parents, parent{"Secret", ns, str("spec", "pullSecretRef", "name")})
	case "AgentClusterInstall":
		parents = append(parents, parent{"ClusterDeployment", ns, str("spec", "clusterDeploymentRef", "name")},
			parent{"ClusterImageSet", "", str("spec", "imageSetRef", "name")})
	case "InfraEnv":
		parents = append(parents, parent{"ClusterDeployment", str("spec", "clusterRef", "namespace"), str("spec", "clusterRef", "name")},
			parent{"Secret", ns, str("spec", "pullSecretRef", "name")})
	case "Agent":
		parents = append(parents, parent{"InfraEnv", ns, obj.GetLabels()["infraenvs.agent-install.openshift.io"]},
			parent{"ClusterDeployment", str("spec", "clusterDeploymentName", "namespace"), str("spec", "clusterDeploymentName", "name")})
	case "BareMetalHost":
		parents = append(parents, parent{"InfraEnv", ns, obj.GetLabels()["infraenvs.agent-install.openshift.io"]})
	}
	for _, p := range parents {
		if p.name == "" {
			continue
		}
		var err error
		if p.ns == "" {
			_, err = w.dyn.Resource(gvrs[p.kind]).Get(ctx, p.name, metav1.GetOptions{})
		} else {
			_, err = w.dyn.Resource(gvrs[p.kind]).Namespace(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Sprintf("%s %s/%s", p.kind, p.ns, p.name)
		}
	}
	return ""
}

func (w *orderWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(req.Object.Raw, &obj.Object); err == nil && req.Operation == admissionv1.Create {
		key := obj.GetKind() + "/" + obj.GetName()
		dry := req.DryRun != nil && *req.DryRun
		if missing := w.missingParent(r.Context(), obj); missing != "" && !dry {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "order check: " + missing + " does not exist yet"}
			w.mu.Lock()
			w.denied = append(w.denied, key)
			w.mu.Unlock()
		} else if !dry {
			w.mu.Lock()
			w.created = append(w.created, key)
			w.mu.Unlock()
		}
	}
	review.Response = resp
	review.Request = nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&review)
}

// startOrderWebhook serves the webhook and registers it with the API server
// for objects labelled kat-order=id; it returns once the API server calls it.
func startOrderWebhook(t *testing.T, k *harness.Kube, id, ns string) *orderWebhook {
	t.Helper()
	w := &orderWebhook{dyn: k.Dynamic(t)}
	certs := harness.NewCertPair(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certs.CertFile, certs.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	url := fmt.Sprintf("https://%s/validate", ln.Addr().(*net.TCPAddr).String())
	fail, none := admissionregv1.Fail, admissionregv1.SideEffectClassNone
	name := "kat-order-" + id
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "order.kat.example.com",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: &url, CABundle: certs.CAPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"kat-order": id}},
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create},
				Rule: admissionregv1.Rule{
					APIGroups:   []string{"", "hive.openshift.io", "extensions.hive.openshift.io", "agent-install.openshift.io", "metal3.io"},
					APIVersions: []string{"*"},
					Resources: []string{"namespaces", "secrets", "configmaps", "clusterimagesets", "clusterdeployments", "agentclusterinstalls",
						"nmstateconfigs", "infraenvs", "baremetalhosts", "agents", "agentclassifications"},
				},
			}},
		}},
	}
	cs := k.Clientset(t)
	ctx := context.Background()
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	// Negative control, and the wait for the API server to load the webhook:
	// an Agent whose InfraEnv does not exist must be denied.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
		"metadata": map[string]any{"name": "order-probe", "namespace": ns,
			"labels": map[string]any{"kat-order": id, "infraenvs.agent-install.openshift.io": "no-such-infraenv"}},
		"spec": map[string]any{"approved": false, "role": "worker"}}}
	agents := w.dyn.Resource(schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"}).Namespace(ns)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := agents.Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			break // denied: the webhook is active
		}
		_ = agents.Delete(ctx, "order-probe", metav1.DeleteOptions{})
		if time.Now().After(deadline) {
			t.Fatal("the order webhook never became active")
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.mu.Lock()
	denied := len(w.denied)
	w.denied = nil
	w.mu.Unlock()
	if denied == 0 {
		t.Fatal("probe was rejected, but not by the order webhook")
	}
	return w
}
