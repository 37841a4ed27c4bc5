package resources

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster is a client-go fake dynamic client that understands server-side
// apply well enough for unit tests: create when absent (new UID), otherwise
// replace what the patch sets, bumping resourceVersion only on change. It
// records every write in order.
type fakeCluster struct {
	*dynamicfake.FakeDynamicClient
	mu     sync.Mutex
	writes []string // "apply <key>" or "status <key>"
	seq    int
}

func newFakeCluster(objs ...runtime.Object) *fakeCluster {
	lists := map[schema.GroupVersionResource]string{}
	for _, s := range Order {
		for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
			lists[schema.GroupVersionResource{Group: s.Group, Version: v, Resource: s.Resource}] = s.Kind + "List"
		}
	}
	f := &fakeCluster{FakeDynamicClient: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)}
	f.PrependReactor("patch", "*", f.apply)
	return f
}

func (f *fakeCluster) apply(action k8stesting.Action) (bool, runtime.Object, error) {
	pa, ok := action.(k8stesting.PatchAction)
	if !ok || pa.GetPatchType() != types.ApplyPatchType {
		return false, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	patch := &unstructured.Unstructured{}
	if err := json.Unmarshal(pa.GetPatch(), &patch.Object); err != nil {
		return true, nil, err
	}
	gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
	key := fmt.Sprintf("%s %s/%s", patch.GetKind(), ns, name)
	tracker := f.Tracker()
	cur, err := tracker.Get(gvr, ns, name)
	if pa.GetSubresource() == "status" {
		if err != nil {
			return true, nil, err
		}
		u := cur.(*unstructured.Unstructured).DeepCopy()
		u.Object["status"] = patch.Object["status"]
		f.writes = append(f.writes, "status "+key)
		return true, u, tracker.Update(gvr, u, ns)
	}
	f.writes = append(f.writes, "apply "+key)
	if apierrors.IsNotFound(err) {
		f.seq++
		patch.SetUID(types.UID(fmt.Sprintf("new-uid-%d", f.seq)))
		patch.SetResourceVersion("1")
		patch.SetCreationTimestamp(metav1.Now())
		return true, patch, tracker.Create(gvr, patch, ns)
	}
	if err != nil {
		return true, nil, err
	}
	u := cur.(*unstructured.Unstructured).DeepCopy()
	before := u.DeepCopy()
	for k, v := range patch.Object {
		if k != "metadata" {
			u.Object[k] = v
		}
	}
	if l := patch.GetLabels(); l != nil {
		u.SetLabels(l)
	}
	if a := patch.GetAnnotations(); a != nil {
		u.SetAnnotations(a)
	}
	if o := patch.GetOwnerReferences(); o != nil {
		u.SetOwnerReferences(o)
	}
	if !reflect.DeepEqual(before.Object, u.Object) {
		var rv int
		fmt.Sscan(u.GetResourceVersion(), &rv)
		u.SetResourceVersion(fmt.Sprint(rv + 1))
	}
	return true, u, tracker.Update(gvr, u, ns)
}

func (f *fakeCluster) client() Client { return Client{Dynamic: f} }

func (f *fakeCluster) get(t interface{ Fatalf(string, ...any) }, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(apiVersion)
	probe.SetKind(kind)
	probe.SetNamespace(ns)
	gvr, _ := gvrOf(probe)
	o, err := f.Tracker().Get(gvr, ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	return o.(*unstructured.Unstructured)
}
