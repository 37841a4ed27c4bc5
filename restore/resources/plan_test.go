package resources

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNewPlan_OrdersByTable(t *testing.T) {
	p, err := NewPlan(export(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	last := -1
	for _, it := range p.Items {
		if it.Step < last {
			t.Errorf("%s (step %d) after step %d", it.Key(), it.Step, last)
		}
		last = it.Step
		if len(kinds) == 0 || kinds[len(kinds)-1] != it.Object.GetKind() {
			kinds = append(kinds, it.Object.GetKind())
		}
	}
	want := "ClusterImageSet Namespace Secret ConfigMap ClusterDeployment AgentClusterInstall NMStateConfig InfraEnv BareMetalHost Agent AgentClassification"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds in order:\n got %s\nwant %s", got, want)
	}
	for _, s := range Order {
		if s.Reason == "" || s.Resource == "" {
			t.Errorf("order step %s has no reason or resource", s.Kind)
		}
	}
}

func TestNewPlan_UnknownKinds(t *testing.T) {
	objs := append(export(t), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x", "namespace": "demo"}}})
	_, err := NewPlan(objs, Options{})
	var uk *UnknownKindsError
	if !errors.As(err, &uk) || len(uk.Objects) != 1 || uk.Objects[0].Kind != "Deployment" {
		t.Fatalf("err = %v, want an UnknownKindsError naming the Deployment", err)
	}
	p, err := NewPlan(objs, Options{SkipUnknownKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unknown) != 1 || len(p.Items) != len(exportYAML) {
		t.Fatalf("unknown = %v, items = %d", p.Unknown, len(p.Items))
	}
}

func TestNewPlan_InvalidOptions(t *testing.T) {
	for _, o := range []Options{{Existing: "merge"}, {DryRun: "yes"}, {NamespaceMapping: map[string]string{"a": ""}}} {
		if _, err := NewPlan(nil, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestTransforms_ServerFieldsStatusFinalizers(t *testing.T) {
	p, err := NewPlan(export(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		md := it.Object.Object["metadata"].(map[string]any)
		for _, f := range serverFields {
			if _, ok := md[f]; ok {
				t.Errorf("%s keeps metadata.%s", it.Key(), f)
			}
		}
		if _, ok := it.Object.Object["status"]; ok {
			t.Errorf("%s keeps status", it.Key())
		}
		if _, ok := it.Object.Object["stringData"]; ok {
			t.Errorf("%s keeps stringData", it.Key())
		}
	}
	ps := find(t, p, "Secret", "pull-secret")
	if d, _, _ := unstructured.NestedString(ps.Object.Object, "data", ".dockerconfigjson"); d == "" {
		t.Errorf("pull secret stringData not folded into data")
	}
}

func TestTransforms_NamespaceMapping(t *testing.T) {
	p, err := NewPlan(export(t), Options{NamespaceMapping: map[string]string{"demo": "restored"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Object.GetNamespace() == "demo" || (it.Object.GetKind() == "Namespace" && it.Object.GetName() != "restored") {
			t.Errorf("%s not mapped", it.Key())
		}
	}
	checks := []struct {
		kind, name string
		path       []string
	}{
		{"InfraEnv", "demo", []string{"spec", "clusterRef", "namespace"}},
		{"Agent", hostID, []string{"spec", "clusterDeploymentName", "namespace"}},
		{"AgentClusterInstall", "demo", []string{"spec", "ignitionEndpoint", "caCertificateReference", "namespace"}},
		{"Agent", hostID, []string{"metadata", "labels", LabelClusterDeploymentNamespace}},
	}
	for _, c := range checks {
		it := find(t, p, c.kind, c.name)
		if got, _, _ := unstructured.NestedString(it.Object.Object, c.path...); got != "restored" {
			t.Errorf("%s %s: %s = %q, want restored", c.kind, c.name, strings.Join(c.path, "."), got)
		}
	}
	bmh := find(t, p, "BareMetalHost", "bmh-0")
	if s := bmh.Object.GetAnnotations()[AnnotationBMHStatus]; !strings.Contains(s, `"namespace":"restored"`) || strings.Contains(s, `"namespace":"demo"`) {
		t.Errorf("BMH status annotation credentials namespace not mapped: %s", s)
	}
}

func TestTransforms_AssistedSafety(t *testing.T) {
	p, err := NewPlan(export(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	agent := find(t, p, "Agent", hostID)
	if agent.Object.GetAnnotations()[AnnotationSkipSpokeCleanup] != "true" {
		t.Errorf("agent lacks %s", AnnotationSkipSpokeCleanup)
	}
	if n, _, _ := unstructured.NestedString(agent.Object.Object, "spec", "clusterDeploymentName", "name"); n != "demo" {
		t.Errorf("agent spec.clusterDeploymentName.name = %q", n)
	}
	cd := find(t, p, "ClusterDeployment", "demo")
	if v, _, _ := unstructured.NestedBool(cd.Object.Object, "spec", "preserveOnDelete"); !v {
		t.Errorf("cluster 0's CD lacks preserveOnDelete")
	}
	bmh := find(t, p, "BareMetalHost", "bmh-0")
	ann := bmh.Object.GetAnnotations()
	if _, ok := ann[AnnotationBMHPaused]; !ok || bmh.Skip != "" {
		t.Errorf("BMH with status: paused=%v skip=%q", ok, bmh.Skip)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(ann[AnnotationBMHStatus]), &st); err != nil || st["operationalStatus"] != "OK" {
		t.Errorf("BMH status annotation = %q (%v)", ann[AnnotationBMHStatus], err)
	}
	if bare := find(t, p, "BareMetalHost", "bmh-bare"); bare.Skip == "" {
		t.Errorf("BMH without status is not skipped")
	}
	if v := ann[AnnotationBMHPaused]; v != "" {
		t.Errorf("BMH not paused on node 0: paused = %q, want the restore's empty value", v)
	}
	// A host BMAC had paused on node 0 keeps BMAC's value
	// (release-4.19 bmh_agent_controller.go addBMHStatusAndPausedAnnotations
	// writes "assisted-service-controller").
	objs := export(t)
	for _, o := range objs {
		if o.GetKind() == "BareMetalHost" && o.GetName() == "bmh-0" {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[AnnotationBMHPaused] = "assisted-service-controller"
			o.SetAnnotations(a)
		}
	}
	p2, err := NewPlan(objs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := find(t, p2, "BareMetalHost", "bmh-0").Object.GetAnnotations()[AnnotationBMHPaused]; v != "assisted-service-controller" {
		t.Errorf("node 0's paused value = %q, want BMAC's assisted-service-controller kept", v)
	}
}

func TestTransforms_ClusterZeroSelection(t *testing.T) {
	second := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
		"metadata": map[string]any{"name": "other", "namespace": "demo"},
		"spec":     map[string]any{"baseDomain": "x", "clusterName": "other", "platform": map[string]any{}}}}
	objs := append(export(t), second)
	if _, err := NewPlan(objs, Options{}); err == nil {
		t.Fatal("several ClusterDeployments without ClusterZero: no error")
	}
	p, err := NewPlan(objs, Options{ClusterZero: &ObjectKey{Namespace: "demo", Name: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"other": true, "demo": false} {
		v, _, _ := unstructured.NestedBool(find(t, p, "ClusterDeployment", name).Object.Object, "spec", "preserveOnDelete")
		if v != want {
			t.Errorf("CD %s preserveOnDelete = %v, want %v", name, v, want)
		}
	}
	if _, err := NewPlan(objs, Options{ClusterZero: &ObjectKey{Namespace: "demo", Name: "absent"}}); err == nil {
		t.Error("ClusterZero naming a missing CD: no error")
	}
}

func TestTransforms_StatusURLs(t *testing.T) {
	t.Run("removed without a service URL", func(t *testing.T) {
		p, err := NewPlan(export(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if it.Status != nil {
				t.Errorf("%s has status to write: %v", it.Key(), it.Status)
			}
		}
		if len(p.NodeZeroURLs) != 2 {
			t.Errorf("node-0 bases = %v, want the service and image service", p.NodeZeroURLs)
		}
	})
	t.Run("rewritten, then signed when applied", func(t *testing.T) {
		p, err := NewPlan(export(t), Options{ServiceURL: "https://assisted.apps.demo.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		aci := find(t, p, "AgentClusterInstall", "demo")
		ev, _, _ := unstructured.NestedString(aci.Status, "debugInfo", "eventsURL")
		if want := "https://assisted.apps.demo.example.com/api/assisted-install/v2/events?cluster_id=" + clusterID; ev != want {
			t.Errorf("planned ACI eventsURL\n got %s\nwant %s", ev, want)
		}
		if find(t, p, "InfraEnv", "demo").Status != nil {
			t.Error("InfraEnv status is written; it is recomputed from the database")
		}
		p.SetSigner(fakeSigner{}) // the key exists only after planning
		f := newFakeCluster()
		if _, err := Apply(context.Background(), f.client(), p); err != nil {
			t.Fatal(err)
		}
		got := f.get(t, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", "demo", "demo")
		ev, _, _ = unstructured.NestedString(got.Object, "status", "debugInfo", "eventsURL")
		if want := "https://assisted.apps.demo.example.com/api/assisted-install/v2/events?api_key=NEW-" + clusterID + "&cluster_id=" + clusterID; ev != want {
			t.Errorf("applied ACI eventsURL\n got %s\nwant %s", ev, want)
		}
		agent := f.get(t, "agent-install.openshift.io/v1beta1", "Agent", "demo", hostID)
		logs, _, _ := unstructured.NestedString(agent.Object, "status", "debugInfo", "logsURL")
		if !strings.HasPrefix(logs, "https://assisted.apps.demo.example.com/api/assisted-install/v2/clusters/"+clusterID+"/logs?") ||
			strings.Contains(logs, "OLDTOKEN") || !strings.Contains(logs, "api_key=NEW-"+clusterID) {
			t.Errorf("agent logsURL = %s", logs)
		}
		if state, found, _ := unstructured.NestedString(got.Object, "status", "debugInfo", "state"); found {
			t.Errorf("ACI status keeps node-0 state %q", state)
		}
	})
	t.Run("a node-0 URL elsewhere fails the plan", func(t *testing.T) {
		objs := export(t)
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" {
				_ = unstructured.SetNestedField(o.Object, "url: "+nodeZero+"/api", "data", "leak.yaml")
			}
		}
		_, err := NewPlan(objs, Options{})
		if err == nil || !strings.Contains(err.Error(), "data.leak.yaml") {
			t.Fatalf("err = %v, want a node-0 URL error naming data.leak.yaml", err)
		}
	})
}

func TestURLWithBase(t *testing.T) {
	bases := map[string]bool{"http://192.168.111.80:8090": true}
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"http://192.168.111.80:8090/api", true},
		{"see http://192.168.111.80:8090", true},
		{"http://192.168.111.800:8090/api", false},
		{"192.168.111.80/24", false},
		{"x http://192.168.111.800 y http://192.168.111.80:8090/", true},
	} {
		if got := urlWithBase(c.s, bases) != ""; got != c.want {
			t.Errorf("urlWithBase(%q) = %v", c.s, got)
		}
	}
}
