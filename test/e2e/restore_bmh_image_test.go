package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	crs "github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreResources_BareMetalHostImageOnRealAPIServer restores the export
// with its BareMetalHost as BMAC leaves it on node 0 in the non-converged
// flow (openshift/assisted-service release-4.19,
// internal/controller/controllers/bmh_agent_controller.go reconcileBMH lines
// 1026-1033: spec.image = the InfraEnv's isoDownloadURL, format live-iso;
// addBMHDetachedAnnotationIfHostIsRebooting lines 652-662: detached once the
// host reboots into the installed system) and the image the Bare Metal
// Operator recorded as provisioned. Without an image service URL the plan
// refuses before anything is written; with one both URLs land on it, alike,
// in the real metal3 CRD.
func TestRestoreResources_BareMetalHostImageOnRealAPIServer(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	id := ns
	const imageService = "https://assisted-image-service-multicluster-engine.apps.cluster0.example.com"
	iso := node0Images + "/byid/" + node0Infra + "/4.19/x86_64/minimal.iso?api_key=" + node0Token
	export := func() []*unstructured.Unstructured {
		objs := node0Export(t, id)
		for _, o := range objs {
			if o.GetKind() != "BareMetalHost" {
				continue
			}
			image := map[string]any{"url": iso, "format": "live-iso"}
			if err := unstructured.SetNestedMap(o.Object, image, "spec", "image"); err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedMap(o.Object, map[string]any{"url": iso, "format": "live-iso"}, "status", "provisioning", "image"); err != nil {
				t.Fatal(err)
			}
			ann := o.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[crs.AnnotationBMHDetached] = "assisted-service-controller"
			o.SetAnnotations(ann)
		}
		return objs
	}
	opts := crs.Options{NamespaceMapping: mapping(ns), BundleDigest: testDigest}

	_, err := crs.Restore(context.Background(), restoreClient(t, k.Config), export(), opts)
	if err == nil || !strings.Contains(err.Error(), "--image-service-url") || strings.Contains(err.Error(), node0Token) {
		t.Fatalf("restore without an image service URL: err = %v", err)
	}
	if objs := restoredObjects(t, k.Dynamic(t), ns, id); len(objs) != 0 {
		t.Fatalf("the refused plan wrote %v", keys(objs))
	}

	opts.ImageServiceURL = imageService
	if _, err := crs.Restore(context.Background(), restoreClient(t, k.Config), export(), opts); err != nil {
		t.Fatalf("restore with an image service URL: %v", err)
	}
	bmh := restoredObjects(t, k.Dynamic(t), ns, id)["BareMetalHost/okd-5"]
	if bmh == nil {
		t.Fatal("BareMetalHost okd-5 not restored")
	}
	want := imageService + "/byid/" + node0Infra + "/4.19/x86_64/minimal.iso"
	if got, _, _ := unstructured.NestedString(bmh.Object, "spec", "image", "url"); got != want {
		t.Errorf("spec.image.url = %q, want %q", got, want)
	}
	if got, _, _ := unstructured.NestedString(bmh.Object, "spec", "image", "format"); got != "live-iso" {
		t.Errorf("spec.image.format = %q, want live-iso", got)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(bmh.GetAnnotations()[crs.AnnotationBMHStatus]), &st); err != nil {
		t.Fatalf("status annotation: %v", err)
	}
	if got, _, _ := unstructured.NestedString(st, "provisioning", "image", "url"); got != want {
		t.Errorf("status annotation provisioning.image.url = %q, want %q", got, want)
	}
	if got, _, _ := unstructured.NestedString(st, "provisioning", "state"); got != "provisioned" {
		t.Errorf("status annotation provisioning.state = %q, want provisioned", got)
	}
	if _, ok := bmh.GetAnnotations()[crs.AnnotationBMHDetached]; !ok {
		t.Error("the detached annotation was not kept")
	}
	js, _ := json.Marshal(bmh.Object)
	for _, h := range node0Hosts {
		if strings.Contains(string(js), h) {
			t.Errorf("BareMetalHost still holds %q", h)
		}
	}
}
