package resources

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func TestApply_CreatesInOrderAndRelinksOwners(t *testing.T) {
	f := newFakeCluster()
	rep, err := Restore(context.Background(), f.client(), export(t), Options{BundleDigest: "sha256:abc", ServiceURL: "https://svc.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[ActionCreated] != len(exportYAML)-1 || rep.Counts[ActionSkipped] != 1 {
		t.Fatalf("counts = %v", rep.Counts)
	}
	// The first write of each object follows the order table.
	firstStep := map[string]int{}
	last := -1
	for _, w := range f.writes {
		if !strings.HasPrefix(w, "apply ") {
			continue
		}
		if _, seen := firstStep[w]; seen {
			continue
		}
		kind := strings.Fields(w)[1]
		step := -1
		for i, s := range Order {
			if s.Kind == kind {
				step = i
			}
		}
		if step < last {
			t.Errorf("write %q (step %d) after step %d", w, step, last)
		}
		firstStep[w], last = step, step
	}
	cd := f.get(t, "hive.openshift.io/v1", "ClusterDeployment", "demo", "demo")
	ie := f.get(t, "agent-install.openshift.io/v1beta1", "InfraEnv", "demo", "demo")
	for _, c := range []struct {
		apiVersion, kind, name string
		owner                  string
	}{
		{"extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", "demo", string(cd.GetUID())},
		{"agent-install.openshift.io/v1beta1", "Agent", hostID, string(ie.GetUID())},
		{"v1", "Secret", "demo-admin-kubeconfig", string(cd.GetUID())},
	} {
		o := f.get(t, c.apiVersion, c.kind, "demo", c.name)
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || string(refs[0].UID) != c.owner || strings.HasPrefix(string(refs[0].UID), "old-") {
			t.Errorf("%s %s owners = %+v, want UID %s", c.kind, c.name, refs, c.owner)
		}
	}
	// The Secret precedes its ClusterDeployment: it is linked by a second apply.
	var secretApplies int
	for _, w := range f.writes {
		if w == "apply Secret demo/demo-admin-kubeconfig" {
			secretApplies++
		}
	}
	if secretApplies != 2 {
		t.Errorf("credential Secret applied %d times, want 2 (create, then link)", secretApplies)
	}
	aci := f.get(t, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", "demo", "demo")
	if ev, _, _ := unstructured.NestedString(aci.Object, "status", "debugInfo", "eventsURL"); !strings.HasPrefix(ev, "https://svc.example.com/") {
		t.Errorf("ACI status eventsURL = %q", ev)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"c2VjcmV0LXZhbHVlLXBsYW50ZWQ", "a3ViZWNvbmZpZy1wbGFudGVk", "OLDTOKEN"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("report leaks %s", secret)
		}
	}
}

func TestApply_RerunConverges(t *testing.T) {
	f := newFakeCluster()
	opts := Options{BundleDigest: "sha256:abc"}
	if _, err := Restore(context.Background(), f.client(), export(t), opts); err != nil {
		t.Fatal(err)
	}
	before := f.get(t, "hive.openshift.io/v1", "ClusterDeployment", "demo", "demo")
	rep, err := Restore(context.Background(), f.client(), export(t), opts)
	if err != nil {
		t.Fatalf("rerun with --existing=fail: %v", err)
	}
	if rep.Counts[ActionCreated] != 0 || rep.Counts[ActionFailed] != 0 {
		t.Fatalf("rerun counts = %v", rep.Counts)
	}
	after := f.get(t, "hive.openshift.io/v1", "ClusterDeployment", "demo", "demo")
	if before.GetUID() != after.GetUID() {
		t.Errorf("rerun replaced the ClusterDeployment")
	}
}

func TestApply_ExistingPolicies(t *testing.T) {
	conflicting := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
		"metadata": map[string]any{"name": "demo", "namespace": "demo", "uid": "foreign"},
		"spec":     map[string]any{"baseDomain": "other.example.com", "clusterName": "demo"}}}

	t.Run("fail changes nothing", func(t *testing.T) {
		f := newFakeCluster(conflicting.DeepCopy())
		rep, err := Restore(context.Background(), f.client(), export(t), Options{})
		var ce *ConflictError
		if !errors.As(err, &ce) || len(ce.Objects) != 1 || ce.Objects[0].Name != "demo" {
			t.Fatalf("err = %v, want a ConflictError naming the CD", err)
		}
		if len(f.writes) != 0 {
			t.Fatalf("writes before failing: %v", f.writes)
		}
		if rep == nil || rep.Counts[ActionFailed] != 1 || rep.Counts[ActionCreated] != 0 {
			t.Fatalf("report = %+v", rep)
		}
	})
	t.Run("skip keeps it", func(t *testing.T) {
		f := newFakeCluster(conflicting.DeepCopy())
		rep, err := Restore(context.Background(), f.client(), export(t), Options{Existing: ExistingSkip})
		if err != nil {
			t.Fatal(err)
		}
		cd := f.get(t, "hive.openshift.io/v1", "ClusterDeployment", "demo", "demo")
		if d, _, _ := unstructured.NestedString(cd.Object, "spec", "baseDomain"); d != "other.example.com" {
			t.Errorf("skip changed the CD: baseDomain %q", d)
		}
		aci := f.get(t, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", "demo", "demo")
		if refs := aci.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "foreign" {
			t.Errorf("ACI owner = %+v, want the existing CD's UID", refs)
		}
		if rep.Counts[ActionSkipped] != 2 {
			t.Errorf("counts = %v", rep.Counts)
		}
	})
	t.Run("update overwrites it", func(t *testing.T) {
		f := newFakeCluster(conflicting.DeepCopy())
		rep, err := Restore(context.Background(), f.client(), export(t), Options{Existing: ExistingUpdate})
		if err != nil {
			t.Fatal(err)
		}
		cd := f.get(t, "hive.openshift.io/v1", "ClusterDeployment", "demo", "demo")
		if d, _, _ := unstructured.NestedString(cd.Object, "spec", "baseDomain"); d != "example.com" {
			t.Errorf("update left baseDomain %q", d)
		}
		if rep.Counts[ActionUpdated] != 1 {
			t.Errorf("counts = %v", rep.Counts)
		}
	})
	t.Run("identical object and existing namespace are not conflicts", func(t *testing.T) {
		p, err := NewPlan(export(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		cis := find(t, p, "ClusterImageSet", "openshift-v4.16.0").Object.DeepCopy()
		cis.SetUID("mce-made")
		_ = unstructured.SetNestedField(cis.Object, "defaulted", "spec", "extra")
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "demo", "labels": map[string]any{"owner": "someone"}}}}
		f := newFakeCluster(cis, ns)
		rep, err := Apply(context.Background(), f.client(), p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts[ActionUnchanged] != 2 {
			t.Errorf("counts = %v, want 2 unchanged", rep.Counts)
		}
	})
}

func TestApply_ClientDryRunWritesNothing(t *testing.T) {
	f := newFakeCluster()
	rep, err := Restore(context.Background(), f.client(), export(t), Options{DryRun: DryRunClient})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.writes) != 0 {
		t.Fatalf("client dry run wrote: %v", f.writes)
	}
	if rep.Counts[ActionCreated] != len(exportYAML)-1 {
		t.Errorf("counts = %v", rep.Counts)
	}
}

func TestApply_SecretFailureNeverQuotesTheServer(t *testing.T) {
	f := newFakeCluster()
	f.PrependReactor("patch", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewBadRequest(`data[.dockerconfigjson]: Invalid value: "c2VjcmV0LXZhbHVlLXBsYW50ZWQ"`)
	})
	rep, err := Restore(context.Background(), f.client(), export(t), Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) || ae.Object.Kind != "Secret" || !apierrors.IsBadRequest(err) {
		t.Fatalf("err = %v, want an ApplyError for a Secret wrapping the API error", err)
	}
	var buf bytes.Buffer
	_ = rep.WriteJSON(&buf)
	for _, s := range []string{err.Error(), buf.String()} {
		if strings.Contains(s, "c2VjcmV0LXZhbHVlLXBsYW50ZWQ") {
			t.Errorf("secret value leaked: %s", s)
		}
	}
}

func TestCheck_FindsConflictsAndWritesNothing(t *testing.T) {
	cd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
		"metadata": map[string]any{"name": "demo", "namespace": "demo"}, "spec": map[string]any{"baseDomain": "other"}}}
	for _, tc := range []struct {
		name     string
		existing []runtime.Object
		wantErr  bool
	}{{"clean target", nil, false}, {"conflicting CD", []runtime.Object{cd}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(tc.existing...)
			p, err := NewPlan(export(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(context.Background(), f.client(), p)
			var ce *ConflictError
			if tc.wantErr != errors.As(err, &ce) || (!tc.wantErr && err != nil) {
				t.Fatalf("err = %v", err)
			}
			if len(f.writes) != 0 || rep.DryRun != DryRunClient || p.Options().DryRun != DryRunNone {
				t.Fatalf("writes %v, report dry run %q, plan dry run %q", f.writes, rep.DryRun, p.Options().DryRun)
			}
		})
	}
}
