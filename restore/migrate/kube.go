package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// fieldManager owns what migrate applies.
const fieldManager = "kubectl-assisted"

// kubeCluster is cluster 0 through client-go.
type kubeCluster struct {
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewCluster reaches cluster 0 through cfg.
func NewCluster(cfg *rest.Config) (Cluster, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeCluster{cs: cs, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

func (k *kubeCluster) Reachable(context.Context) error {
	_, err := k.cs.Discovery().ServerVersion()
	return err
}

func (k *kubeCluster) AgentServiceConfig(ctx context.Context) (map[string]string, bool, error) {
	asc, err := k.dyn.Resource(ASCResource).Get(ctx, ASCName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return asc.GetAnnotations(), true, nil
}

func (k *kubeCluster) ServiceReplicas(ctx context.Context, ns string) (*int32, bool, error) {
	dep, err := k.cs.AppsV1().Deployments(ns).Get(ctx, ServiceDeployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return dep.Spec.Replicas, true, nil
}

func (k *kubeCluster) ScaleServiceToZero(ctx context.Context, ns string) error {
	dep, err := k.cs.AppsV1().Deployments(ns).Get(ctx, ServiceDeployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	zero := int32(0)
	dep.Spec.Replicas = &zero
	_, err = k.cs.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{})
	return err
}

func (k *kubeCluster) PVCSize(ctx context.Context, ns, name string) (resource.Quantity, bool, error) {
	pvc, err := k.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return resource.Quantity{}, false, nil
	case err != nil:
		return resource.Quantity{}, false, err
	}
	return pvc.Spec.Resources.Requests[corev1.ResourceStorage], true, nil
}

// Apply server-side applies typed or unstructured objects, in order.
func (k *kubeCluster) Apply(ctx context.Context, objs []runtime.Object, digest string) error {
	force := true
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if digest != "" {
			a := u.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[ProvenanceAnnotation] = digest
			u.SetAnnotations(a)
		}
		gvk := u.GroupVersionKind()
		mapping, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: cluster 0 does not serve it: %w", gvk.Kind, err)
		}
		body, err := json.Marshal(u)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = k.dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			ri = k.dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err)
		}
	}
	return nil
}

func (k *kubeCluster) EnsurePostgresSecret(ctx context.Context, ns string) error {
	creds, err := auth.DefaultPostgresCredentials()
	if err != nil {
		return err
	}
	_, _, err = auth.EnsurePostgresSecret(ctx, k.cs, ns, creds)
	return err
}

func (k *kubeCluster) LocalAuthKey(ctx context.Context, ns string) (*auth.KeyPair, error) {
	kp, _, err := auth.EnsureLocalAuthSecret(ctx, k.cs, ns)
	return kp, err
}

func (k *kubeCluster) WaitReceipt(ctx context.Context, ns, digest string, onStatus func(string)) (*journal.Receipt, error) {
	last := ""
	return waitfor.Wait(ctx, k.cs, ns, digest, waitfor.Options{
		OnStatus: func(s waitfor.Status) {
			msg := s.State
			if s.Phase != "" {
				msg += " (phase " + s.Phase + ")"
			}
			if s.Err != nil {
				msg += ": " + s.Err.Error()
			}
			if msg != last && onStatus != nil {
				onStatus(msg)
				last = msg
			}
		},
	})
}

func (k *kubeCluster) Switchover(ctx context.Context, o switchover.Options) (*switchover.Result, error) {
	return switchover.Run(ctx, k.cs, o)
}
