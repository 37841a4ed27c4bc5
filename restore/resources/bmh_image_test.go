package resources

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A BareMetalHost as BMAC leaves it on node 0 (openshift/assisted-service
// release-4.19 bmh_agent_controller.go reconcileBMH lines 1026-1033: image URL
// = the InfraEnv's status.isoDownloadURL, format live-iso), with the image the
// Bare Metal Operator recorded as provisioned.
const (
	n0Images = "http://192.168.111.80:8888"
	n0ISO    = n0Images + "/byid/" + infraEnvID + "/4.19/x86_64/minimal.iso?api_key=NODE0TOKEN"
	c0Images = "https://assisted-image-service-multicluster-engine.apps.c0.example.com"
)

func bmhWithImage(name, imageURL string, detached bool) *unstructured.Unstructured {
	ann := map[string]any{}
	if detached {
		ann[AnnotationBMHDetached] = `{"deleteAction":"delay"}`
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"name": name, "namespace": "site", "annotations": ann,
			"labels": map[string]any{LabelInfraEnv: "ie"}},
		"spec": map[string]any{"online": true, "image": map[string]any{"url": imageURL, "format": "live-iso"}},
		"status": map[string]any{"operationalStatus": "OK", "provisioning": map[string]any{
			"state": "provisioned", "image": map[string]any{"url": imageURL, "format": "live-iso"}}},
	}}
}

func isoInfraEnv() *unstructured.Unstructured {
	ie := infraEnvObj("ie", nodeZero+"/api/assisted-install/v2/events?infra_env_id="+infraEnvID)
	_ = unstructured.SetNestedField(ie.Object, n0ISO, "status", "isoDownloadURL")
	return ie
}

func TestBareMetalHost_NodeZeroImageURLNeedsImageServiceURL(t *testing.T) {
	objs := []*unstructured.Unstructured{isoInfraEnv(), bmhWithImage("bmh", n0ISO, false)}
	_, err := NewPlan(objs, Options{ServiceURL: "https://svc.c0.example.com"})
	if err == nil || !strings.Contains(err.Error(), "--image-service-url") || !strings.Contains(err.Error(), "spec.image.url") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "NODE0TOKEN") {
		t.Fatalf("error shows the node-0 api_key: %v", err)
	}
}

func TestBareMetalHost_ImageURLsMovedOntoImageService(t *testing.T) {
	for _, detached := range []bool{false, true} {
		objs := []*unstructured.Unstructured{isoInfraEnv(), bmhWithImage("bmh", n0ISO, detached)}
		p, err := NewPlan(objs, Options{ServiceURL: "https://svc.c0.example.com", ImageServiceURL: c0Images + "/"})
		if err != nil {
			t.Fatalf("detached=%v: %v", detached, err)
		}
		it := find(t, p, "BareMetalHost", "bmh")
		want := c0Images + "/byid/" + infraEnvID + "/4.19/x86_64/minimal.iso"
		if got, _, _ := unstructured.NestedString(it.Object.Object, "spec", "image", "url"); got != want {
			t.Errorf("detached=%v: spec.image.url = %q, want %q", detached, got, want)
		}
		if f, _, _ := unstructured.NestedString(it.Object.Object, "spec", "image", "format"); f != "live-iso" {
			t.Errorf("spec.image.format = %q", f)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(it.Object.GetAnnotations()[AnnotationBMHStatus]), &st); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(st, "provisioning", "image", "url"); got != want {
			t.Errorf("detached=%v: status annotation image url = %q, want %q", detached, got, want)
		}
		if s, _, _ := unstructured.NestedString(st, "provisioning", "state"); s != "provisioned" {
			t.Errorf("status annotation state = %q", s)
		}
		notes := strings.Join(it.Notes, "; ")
		wantNote := "BMAC replaces spec.image"
		if detached {
			wantNote = "detached"
		}
		if !strings.Contains(notes, wantNote) {
			t.Errorf("detached=%v: notes = %q", detached, notes)
		}
	}
}

func TestBareMetalHost_ExistingStatusAnnotationImageMoved(t *testing.T) {
	// BMAC writes the status annotation itself for provisioned hosts when
	// PAUSE_PROVISIONED_BMHS is on (bmh_agent_controller.go reconcileBMH lines 934-948).
	b := bmhWithImage("bmh", n0ISO, true)
	st, _, _ := unstructured.NestedMap(b.Object, "status")
	js, _ := json.Marshal(st)
	ann := b.GetAnnotations()
	ann[AnnotationBMHStatus] = string(js)
	b.SetAnnotations(ann)
	delete(b.Object, "status")
	p, err := NewPlan([]*unstructured.Unstructured{isoInfraEnv(), b}, Options{ImageServiceURL: c0Images})
	if err != nil {
		t.Fatal(err)
	}
	got := find(t, p, "BareMetalHost", "bmh").Object.GetAnnotations()[AnnotationBMHStatus]
	if strings.Contains(got, "192.168.111.80") || !strings.Contains(got, c0Images+"/byid/") {
		t.Errorf("status annotation = %s", got)
	}
}

func TestBareMetalHost_ImageElsewhereStays(t *testing.T) {
	const own = "http://images.lab.example.com/rhcos-live.iso"
	p, err := NewPlan([]*unstructured.Unstructured{isoInfraEnv(), bmhWithImage("bmh", own, false)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	it := find(t, p, "BareMetalHost", "bmh")
	if got, _, _ := unstructured.NestedString(it.Object.Object, "spec", "image", "url"); got != own {
		t.Errorf("spec.image.url = %q, want %q", got, own)
	}
}
