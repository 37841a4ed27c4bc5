package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	crs "github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

const testDigest = "sha256:5d41402abc4b2a76b9719d911017c592ae2f8cd1f2c7e3ad2f1f5c7a7b2c3d4e"

func restoreClient(t *testing.T, cfg *rest.Config) crs.Client {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return crs.Client{Dynamic: dyn, Discovery: disc}
}

// restoredObjects lists every object of a restorable kind in ns (and the
// test's ClusterImageSet), keyed "Kind/name".
func restoredObjects(t *testing.T, dyn dynamic.Interface, ns, id string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, s := range crs.Order {
		versions := map[string]string{"": "v1", "hive.openshift.io": "v1", "extensions.hive.openshift.io": "v1beta1",
			"agent-install.openshift.io": "v1beta1", "metal3.io": "v1alpha1"}
		gvr := schema.GroupVersionResource{Group: s.Group, Version: versions[s.Group], Resource: s.Resource}
		var list *unstructured.UnstructuredList
		var err error
		if s.Namespaced {
			list, err = dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kat-order=" + id})
		} else {
			list, err = dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{LabelSelector: "kat-order=" + id})
		}
		if err != nil {
			t.Fatalf("list %s: %v", s.Resource, err)
		}
		for i := range list.Items {
			out[s.Kind+"/"+list.Items[i].GetName()] = &list.Items[i]
		}
	}
	return out
}

func TestRestoreResources_OrderOwnersURLsOnRealAPIServer(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	id := ns
	hook := startOrderWebhook(t, k, id, ns)
	key, err := auth.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	const serviceURL = "https://assisted-service-multicluster-engine.apps.cluster0.example.com"

	rep, err := crs.Restore(context.Background(), restoreClient(t, k.Config), node0Export(t, id), crs.Options{
		NamespaceMapping: mapping(ns), ServiceURL: serviceURL, Signer: auth.URLSigner{Key: key}, BundleDigest: testDigest})
	if err != nil {
		js, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("restore: %v\n%s", err, js)
	}
	// 11 objects: the Namespace exists already (the test made it), everything else is created.
	if rep.Counts[crs.ActionCreated] != 10 || rep.Counts[crs.ActionUnchanged] != 1 || rep.Failed() {
		t.Fatalf("counts = %v", rep.Counts)
	}

	// Order: the API server admitted the creations in the table's order, and
	// the webhook denied none for a missing parent.
	created := hook.Created()
	if len(hook.denied) != 0 {
		t.Fatalf("order webhook denied %v", hook.denied)
	}
	stepOf := map[string]int{}
	for i, s := range crs.Order {
		stepOf[s.Kind] = i
	}
	last := -1
	for _, c := range created {
		step := stepOf[strings.SplitN(c, "/", 2)[0]]
		if step < last {
			t.Errorf("admitted %s after a later step: %v", c, created)
		}
		last = step
	}
	if len(created) != 10 {
		t.Errorf("admitted creations = %v, want 10", created)
	}

	objs := restoredObjects(t, k.Dynamic(t), ns, id)
	if len(objs) != 10 {
		t.Fatalf("restored objects: %d, want 10: %v", len(objs), keys(objs))
	}
	cd, aci, ie := objs["ClusterDeployment/single-node"], objs["AgentClusterInstall/test-agent-cluster-install"], objs["InfraEnv/myinfraenv"]
	agent := objs["Agent/0479107b-3436-45d3-83a8-cb9a1dc4fb9e"]
	for _, c := range []struct {
		child *unstructured.Unstructured
		owner *unstructured.Unstructured
	}{{aci, cd}, {agent, ie}, {objs["Secret/single-node-admin-kubeconfig"], cd}} {
		refs := c.child.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != c.owner.GetUID() || refs[0].Name != c.owner.GetName() {
			t.Errorf("%s owners = %+v, want %s uid %s", c.child.GetName(), refs, c.owner.GetName(), c.owner.GetUID())
		}
	}
	for name, o := range objs {
		if strings.HasPrefix(string(o.GetUID()), "0ld") || len(o.GetFinalizers()) > 0 {
			t.Errorf("%s keeps node-0 server fields: uid %s finalizers %v", name, o.GetUID(), o.GetFinalizers())
		}
		if o.GetAnnotations()[crs.AnnotationBundleDigest] != testDigest {
			t.Errorf("%s lacks the bundle digest annotation", name)
		}
		applied := false
		for _, mf := range o.GetManagedFields() {
			applied = applied || (mf.Manager == crs.DefaultFieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !applied {
			t.Errorf("%s not server-side applied by %s: %+v", name, crs.DefaultFieldManager, o.GetManagedFields())
		}
		js, _ := json.Marshal(o.Object)
		for _, h := range node0Hosts {
			if strings.Contains(string(js), h) {
				t.Errorf("%s still holds %q", name, h)
			}
		}
	}
	if v, _, _ := unstructured.NestedBool(cd.Object, "spec", "preserveOnDelete"); !v {
		t.Error("cluster 0's ClusterDeployment lacks spec.preserveOnDelete")
	}
	if agent.GetAnnotations()[crs.AnnotationSkipSpokeCleanup] != "true" {
		t.Error("agent lacks skip-spoke-cleanup")
	}
	for path, want := range map[string]string{"spec.clusterDeploymentName.name": "single-node", "spec.clusterDeploymentName.namespace": ns} {
		if got, _, _ := unstructured.NestedString(agent.Object, strings.Split(path, ".")...); got != want {
			t.Errorf("agent %s = %q, want %q", path, got, want)
		}
	}
	if got, _, _ := unstructured.NestedString(ie.Object, "spec", "clusterRef", "namespace"); got != ns {
		t.Errorf("infraenv spec.clusterRef.namespace = %q, want %q", got, ns)
	}
	bmh := objs["BareMetalHost/okd-5"]
	if _, paused := bmh.GetAnnotations()[crs.AnnotationBMHPaused]; !paused || !strings.Contains(bmh.GetAnnotations()[crs.AnnotationBMHStatus], `"provisioned"`) {
		t.Errorf("BMH annotations = %v", bmh.GetAnnotations())
	}
	// Status URLs: rewritten onto the service URL, signed with the key the
	// restore pre-provisions for the operator and the claim the controller
	// uses (openshift/assisted-service internal/controller/controllers:
	// clusterdeployments_controller.go populateEventsURL signs the ACI's with
	// cluster_id, agent_controller.go populateEventsURL the Agent's with the
	// host's infra_env_id).
	_, pub, _ := key.PEM()
	wantClaim := map[string][2]string{"AgentClusterInstall": {"cluster_id", node0Cluster}, "Agent": {"infra_env_id", node0Infra}}
	for _, o := range []*unstructured.Unstructured{aci, agent} {
		ev, _, _ := unstructured.NestedString(o.Object, "status", "debugInfo", "eventsURL")
		if !strings.HasPrefix(ev, serviceURL+"/api/assisted-install/v2/events?") {
			t.Errorf("%s eventsURL = %q", o.GetKind(), ev)
			continue
		}
		tok := ev[strings.Index(ev, "api_key=")+len("api_key="):]
		tok, _, _ = strings.Cut(tok, "&")
		claims, err := auth.VerifyToken(pub, tok, time.Now())
		w := wantClaim[o.GetKind()]
		if err != nil || claims[w[0]] != w[1] {
			t.Errorf("%s eventsURL token: claims %v err %v", o.GetKind(), claims, err)
		}
	}
	if iso, found, _ := unstructured.NestedString(ie.Object, "status", "isoDownloadURL"); found {
		t.Errorf("InfraEnv keeps an ISO URL: %s", iso)
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRestoreResources_ConflictingClusterDeploymentStopsBeforeAnyChange(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	dyn := k.Dynamic(t)
	cdGVR := schema.GroupVersionResource{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"}
	existing := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
		"metadata": map[string]any{"name": "single-node", "namespace": ns, "labels": map[string]any{"kat-order": ns}},
		"spec": map[string]any{"baseDomain": "someone-else.example.com", "clusterName": "other",
			"platform": map[string]any{"agentBareMetal": map[string]any{"agentSelector": map[string]any{}}}}}}
	before, err := dyn.Resource(cdGVR).Namespace(ns).Create(context.Background(), existing, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := crs.Restore(context.Background(), restoreClient(t, k.Config), node0Export(t, ns),
		crs.Options{NamespaceMapping: mapping(ns), BundleDigest: testDigest})
	var ce *crs.ConflictError
	if !errors.As(err, &ce) || len(ce.Objects) != 1 || ce.Objects[0].Name != "single-node" || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err = %v, want a ConflictError naming only the ClusterDeployment", err)
	}
	if rep == nil || rep.Counts[crs.ActionFailed] != 1 {
		t.Fatalf("report = %+v", rep)
	}
	objs := restoredObjects(t, dyn, ns, ns)
	if len(objs) != 1 {
		t.Fatalf("objects after a refused restore: %v", keys(objs))
	}
	if after := objs["ClusterDeployment/single-node"]; after.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("the existing ClusterDeployment was modified")
	}
}

func TestRestoreResources_UnreachableClusterFailsClearly(t *testing.T) {
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", harness.FreePort(t)), Timeout: 5 * time.Second}
	_, err := crs.Restore(context.Background(), restoreClient(t, cfg), node0Export(t, "unreachable"), crs.Options{})
	var ue *crs.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot reach the target cluster") {
		t.Fatalf("err = %v, want an UnreachableError", err)
	}
}

func TestRestoreResources_ServerDryRunPersistsNothing(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	rep, err := crs.Restore(context.Background(), restoreClient(t, k.Config), node0Export(t, ns),
		crs.Options{NamespaceMapping: mapping(ns), DryRun: crs.DryRunServer, ServiceURL: "https://svc.example.com"})
	if err != nil {
		t.Fatalf("server dry run: %v", err)
	}
	if rep.Counts[crs.ActionCreated] != 10 {
		t.Fatalf("counts = %v", rep.Counts)
	}
	if objs := restoredObjects(t, k.Dynamic(t), ns, ns); len(objs) != 0 {
		t.Fatalf("a server dry run persisted %v", keys(objs))
	}
}

func TestRestoreResources_CRDSchemaRejectionIsReported(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	objs := node0Export(t, ns)
	for _, o := range objs {
		if o.GetKind() == "AgentClusterInstall" {
			unstructured.RemoveNestedField(o.Object, "spec", "provisionRequirements") // required by the CRD
		}
	}
	rep, err := crs.Restore(context.Background(), restoreClient(t, k.Config), objs,
		crs.Options{NamespaceMapping: mapping(ns)})
	if err == nil {
		t.Fatal("an ACI without its required field was accepted")
	}
	var failed, notAttempted []string
	for _, r := range rep.Results {
		switch {
		case r.Action == crs.ActionFailed:
			failed = append(failed, r.Kind)
		case r.Action == crs.ActionSkipped && strings.HasPrefix(r.Reason, "not attempted"):
			notAttempted = append(notAttempted, r.Kind)
		}
	}
	if strings.Join(failed, ",") != "AgentClusterInstall" || len(notAttempted) != 5 {
		t.Fatalf("failed %v, not attempted %v", failed, notAttempted)
	}
}
