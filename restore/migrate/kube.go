package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
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

// Reachable asks the API server its version, within ctx: a hold before
// node 0's reboot gives each attempt a deadline, which discovery's
// ServerVersion (no context) overran by its client's whole timeout.
func (k *kubeCluster) Reachable(ctx context.Context) error {
	rc := k.cs.Discovery().RESTClient()
	if rc == nil {
		_, err := k.cs.Discovery().ServerVersion()
		return err
	}
	return rc.Get().AbsPath("/version").Do(ctx).Error()
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
		// One GET of the journal a second: migrate waits on nothing else.
		Interval: time.Second,
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

// databaseImageEnv is the operator's variable naming the PostgreSQL image
// (internal/controller/controllers/images.go DatabaseImage()).
const databaseImageEnv = "DATABASE_IMAGE"

// clusterVersionCRD is the CRD whose presence makes the operator treat the
// cluster as OpenShift (kube_compat.go ServerIsOpenShift).
const clusterVersionCRD = "clusterversions.config.openshift.io"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Operator finds the Deployment whose container sets DATABASE_IMAGE: the
// infrastructure operator, as MCE (infrastructure-operator in
// multicluster-engine) and the standalone operator (config/manager) run it.
// It deploys assisted-service into its own namespace (NAMESPACE, its pod's,
// cmd/operator/main.go), so it must run in ns. Its pod's nodeSelector and
// tolerations are what it copies into the assisted-service Deployment; the
// template's stand in while no pod of it runs.
func (k *kubeCluster) Operator(ctx context.Context, ns string) (*job.Operator, error) {
	deps, err := k.cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		deps, err = k.cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("look for the infrastructure operator on cluster 0: %w", err)
	}
	var found []*appsv1.Deployment
	for i := range deps.Items {
		if databaseImage(&deps.Items[i].Spec.Template.Spec) != "" {
			found = append(found, &deps.Items[i])
		}
	}
	var dep *appsv1.Deployment
	var elsewhere []string
	for _, d := range found {
		if d.Namespace == ns {
			dep = d
		} else {
			elsewhere = append(elsewhere, d.Namespace+"/"+d.Name)
		}
	}
	op := &job.Operator{}
	_, err = k.dyn.Resource(crdResource).Get(ctx, clusterVersionCRD, metav1.GetOptions{})
	switch {
	case err == nil:
		op.OpenShift = true
	case apierrors.IsNotFound(err):
	default:
		return nil, fmt.Errorf("is cluster 0 OpenShift (CRD %s)? %w", clusterVersionCRD, err)
	}
	switch {
	case dep == nil && len(elsewhere) > 0:
		return nil, &OperatorError{Err: fmt.Errorf("the infrastructure operator runs in %s, not in %s: it deploys assisted-service into its own namespace; give -n with that namespace", strings.Join(elsewhere, ", "), ns)}
	case dep == nil:
		return op, &OperatorError{NotFound: true, Err: fmt.Errorf("no infrastructure operator on cluster 0 (no Deployment sets %s)", databaseImageEnv)}
	}
	op.Namespace, op.Deployment, op.DatabaseImage = dep.Namespace, dep.Name, databaseImage(&dep.Spec.Template.Spec)
	op.NodeSelector, op.Tolerations = dep.Spec.Template.Spec.NodeSelector, dep.Spec.Template.Spec.Tolerations
	if sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector); err == nil {
		pods, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("the infrastructure operator's pod: %w", err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				op.NodeSelector, op.Tolerations = p.Spec.NodeSelector, p.Spec.Tolerations
				break
			}
		}
	}
	return op, nil
}

// databaseImage is the DATABASE_IMAGE a pod spec's containers set.
func databaseImage(spec *corev1.PodSpec) string {
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.Name == databaseImageEnv && e.Value != "" {
				return e.Value
			}
		}
	}
	return ""
}

// JobState reads a Job's Complete and Failed conditions; for a failed one
// the restore container's termination message (its last lines:
// FallbackToLogsOnError) joins the condition's message.
func (k *kubeCluster) JobState(ctx context.Context, ns, name string) (JobState, error) {
	j, err := k.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return JobState{}, nil
	}
	if err != nil {
		return JobState{}, err
	}
	st := JobState{Found: true}
	for _, c := range j.Status.Conditions {
		switch {
		case c.Status != corev1.ConditionTrue:
		case c.Type == batchv1.JobComplete:
			st.Complete = true
		case c.Type == batchv1.JobFailed:
			st.Failed, st.Reason = true, strings.TrimSpace(c.Reason+": "+c.Message)
		}
	}
	if !st.Failed {
		return st, nil
	}
	pods, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err == nil {
		var last *corev1.ContainerStateTerminated
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if t := c.State.Terminated; c.Name == job.RestoreContainer && t != nil && (last == nil || t.FinishedAt.After(last.FinishedAt.Time)) {
					last = t
				}
			}
		}
		if last != nil && strings.TrimSpace(last.Message) != "" {
			st.Reason += fmt.Sprintf("; the restore exited %d:\n%s", last.ExitCode, strings.TrimSpace(last.Message))
		}
	}
	return st, nil
}

// DeleteJob deletes a Job in the background (the garbage collector removes
// its pods) and waits until the Job object is gone.
func (k *kubeCluster) DeleteJob(ctx context.Context, ns, name string) error {
	bg := metav1.DeletePropagationBackground
	err := k.cs.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		if _, err := k.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
