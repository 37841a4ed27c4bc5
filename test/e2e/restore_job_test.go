package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The in-cluster restore objects must be accepted by a real API server (server-side
// apply, dry run). The Job runs for real on the test cluster's kubelet in
// jobmode_test.go.
func TestRestoreJob_AcceptedByServerSideApplyDryRun(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	digest := "sha256:" + strings.Repeat("0f", 32)
	storage := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}
	objs, err := job.Objects(job.Options{
		Namespace:         ns,
		Ref:               "registry.example.com/assisted/bundle@" + digest,
		Digest:            digest,
		RestoreImage:      "registry.example.com/assisted/bundle@sha256:" + strings.Repeat("1e", 32),
		Operator:          job.Operator{DatabaseImage: "quay.io/sclorg/postgresql-12-c8s:latest"},
		DatabaseMajor:     12,
		DatabaseStorage:   storage,
		FilesystemStorage: storage,
		RegistryCA:        []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"),
		Identity:          "AGE-SECRET-KEY-1EXAMPLE",
		Signer:            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n",
		RegistryAuth:      []byte(`{"auths":{"registry.example.com":{"auth":"dTpw"}}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := k.Dynamic(t)
	kinds := map[string]bool{}
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(u.Object)
		var ri = dyn.Resource(mapping.Resource)
		var res *unstructured.Unstructured
		force := true
		opts := metav1.PatchOptions{FieldManager: "kubectl-assisted", DryRun: []string{metav1.DryRunAll}, Force: &force}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			res, err = ri.Namespace(ns).Patch(context.Background(), u.GetName(), "application/apply-patch+yaml", body, opts)
		} else {
			res, err = ri.Patch(context.Background(), u.GetName(), "application/apply-patch+yaml", body, opts)
		}
		if err != nil {
			t.Fatalf("server rejected %s %s: %v", gvk.Kind, u.GetName(), err)
		}
		kinds[res.GetKind()] = true
	}
	for _, want := range []string{"Job", "PersistentVolumeClaim", "Secret", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		if !kinds[want] {
			t.Errorf("no %s among the applied objects", want)
		}
	}
}
