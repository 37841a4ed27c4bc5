package resources

import (
	"encoding/json"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Annotations the restore sets, from assisted-service and the metal3 operator.
const (
	// AnnotationSkipSpokeCleanup stops the Agent controller from removing the
	// spoke Node when the Agent is deleted; cluster 0's spoke is cluster 0.
	AnnotationSkipSpokeCleanup = "agent.agent-install.openshift.io/skip-spoke-cleanup"
	// AnnotationBMHStatus carries a BareMetalHost's status (JSON); the Bare
	// Metal Operator restores status from it instead of inspecting again.
	AnnotationBMHStatus = "baremetalhost.metal3.io/status"
	// AnnotationBMHPaused stops the Bare Metal Operator from acting on the host.
	AnnotationBMHPaused = "baremetalhost.metal3.io/paused"
	// AnnotationBMHDetached stops the Bare Metal Operator from managing the
	// host; BMAC sets it once an installing host reboots and then leaves the
	// host alone.
	AnnotationBMHDetached = "baremetalhost.metal3.io/detached"
)

// AgentSafety keeps an Agent bound and its node safe: spec.clusterDeploymentName
// is never touched (an unbound Agent of an installed host triggers a reclaim
// that reboots the node), and skip-spoke-cleanup is set so that deleting the
// Agent never removes a cluster-0 Node.
type AgentSafety struct{}

func (AgentSafety) Name() string { return "agent-safety" }
func (AgentSafety) AppliesTo(obj *unstructured.Unstructured) bool {
	return kindIs(obj, "agent-install.openshift.io", "Agent")
}
func (AgentSafety) Transform(it *Item, _ *Plan) error {
	ann := it.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationSkipSpokeCleanup] = "true"
	it.Object.SetAnnotations(ann)
	if name, _, _ := unstructured.NestedString(it.Object.Object, "spec", "clusterDeploymentName", "name"); name == "" {
		it.Note("agent is not bound to a ClusterDeployment (no spec.clusterDeploymentName)")
	}
	return nil
}

// PreserveClusterZero sets spec.preserveOnDelete on cluster 0's own
// ClusterDeployment, so deleting it never deprovisions the running cluster.
type PreserveClusterZero struct{}

func (PreserveClusterZero) Name() string { return "preserve-cluster-zero" }
func (PreserveClusterZero) AppliesTo(obj *unstructured.Unstructured) bool {
	return kindIs(obj, "hive.openshift.io", "ClusterDeployment")
}
func (PreserveClusterZero) Transform(it *Item, p *Plan) error {
	if p.clusterZero == nil || KeyOf(it.Source) != *p.clusterZero {
		return nil
	}
	it.Note("cluster 0's own ClusterDeployment: spec.preserveOnDelete set")
	return unstructured.SetNestedField(it.Object.Object, true, "spec", "preserveOnDelete")
}

// BareMetalHostStatus restores a BareMetalHost only in a form the Bare Metal
// Operator will not re-provision: its status goes into the status annotation
// (taken from the exported status when the annotation is absent) and the host
// is paused. A host with neither is skipped.
//
// The image URLs on the host that point at node 0's image service (the ones
// assisted-service's BMAC copied from the InfraEnv's status.isoDownloadURL,
// and the same URL the Bare Metal Operator recorded in
// status.provisioning.image once it booted the image) are moved onto
// Options.ImageServiceURL, both alike, so the operator sees the image it
// provisioned as unchanged (no new provisioning: NeedsProvisioning only looks
// for a spec image with an empty provisioned one; WasProvisioned needs the
// provisioned URL kept). They are records, never fetched again for this
// host: BMAC (openshift/assisted-service release-4.19,
// internal/controller/controllers/bmh_agent_controller.go) stops at a
// detached host (reconcileBMH, the BMH_DETACHED_ANNOTATION check, lines
// 951-967) and otherwise replaces any spec.image.url that differs from the
// InfraEnv's isoDownloadURL (shouldReconcileBMH lines 879-883; lines
// 1014-1033), which cluster 0's InfraEnv controller recomputes. Without an
// image service URL such a host fails the plan rather than keep node 0's URL.
//
// On cluster 0 BMAC (PAUSE_PROVISIONED_BMHS, default true) then removes the
// paused annotation of a host whose status is still empty and that carries the
// status annotation, "for letting BMO to restore BMH's status (using the
// 'status' annotation)" (reconcileBMH lines 943-949, removePausedAnnotation
// lines 1968-1977): seen in the rehearsal on every restored host, installing
// and installed, detached ones included; the detached annotation stays and
// BMAC does nothing else to them.
type BareMetalHostStatus struct{}

func (BareMetalHostStatus) Name() string { return "baremetalhost-status" }
func (BareMetalHostStatus) AppliesTo(obj *unstructured.Unstructured) bool {
	return kindIs(obj, "metal3.io", "BareMetalHost")
}
func (BareMetalHostStatus) Transform(it *Item, p *Plan) error {
	ann := it.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	raw, had := ann[AnnotationBMHStatus]
	var status map[string]any
	if had {
		// Set by BMAC itself for provisioned hosts when PAUSE_PROVISIONED_BMHS
		// is on; an annotation that is not JSON is kept as it is.
		if json.Unmarshal([]byte(raw), &status) != nil {
			status = nil
		}
	} else {
		s, found, _ := unstructured.NestedMap(it.Source.Object, "status")
		if !found || len(s) == 0 {
			it.Skip = "no status to restore (annotation " + AnnotationBMHStatus + " or status): the host would be provisioned again"
			return nil
		}
		status = s
		it.Note("status carried in annotation %s", AnnotationBMHStatus)
	}
	moved, err := p.moveBMHImageURLs(it, status)
	if err != nil {
		return err
	}
	if status != nil && (!had || moved) {
		b, err := json.Marshal(status)
		if err != nil {
			return err
		}
		ann[AnnotationBMHStatus] = string(b)
	}
	// BMAC pauses provisioned, detached hosts itself with the value
	// "assisted-service-controller" (bmh_agent_controller.go
	// addBMHStatusAndPausedAnnotations): node 0's value is kept.
	if _, ok := ann[AnnotationBMHPaused]; !ok {
		ann[AnnotationBMHPaused] = ""
	}
	it.Object.SetAnnotations(ann)
	return nil
}

// bmhImageURLs are where a BareMetalHost holds its image URL: in the spec and
// in the status the annotation carries.
var (
	bmhSpecImageURL   = []string{"spec", "image", "url"}
	bmhStatusImageURL = []string{"provisioning", "image", "url"}
)

// moveBMHImageURLs rebases the host's node-0 image URLs (spec.image.url and
// status.provisioning.image.url) onto Options.ImageServiceURL; it reports
// whether status changed. A node-0 image URL without an image service URL
// fails.
func (p *Plan) moveBMHImageURLs(it *Item, status map[string]any) (bool, error) {
	bases := map[string]bool{}
	for _, b := range p.NodeZeroURLs {
		if n, ok := baseOf(b); ok {
			bases[n] = true
		}
	}
	type field struct {
		root   map[string]any
		path   []string
		name   string
		status bool
	}
	fields := []field{{it.Object.Object, bmhSpecImageURL, "spec.image.url", false}}
	if status != nil {
		fields = append(fields, field{status, bmhStatusImageURL, "status.provisioning.image.url (annotation " + AnnotationBMHStatus + ")", true})
	}
	statusMoved, moved := false, false
	for _, f := range fields {
		s, ok, _ := unstructured.NestedString(f.root, f.path...)
		if !ok || s == "" {
			continue
		}
		b, ok := baseOf(s)
		if !ok || !bases[b] {
			continue // an image served elsewhere (not node 0) stays
		}
		if p.opts.ImageServiceURL == "" {
			return false, fmt.Errorf("%s is node 0's image service (%s), which is gone after the hand-over: "+
				"give cluster 0's image service URL (--image-service-url) so that it is moved there", f.name, redactURL(s))
		}
		u, err := url.Parse(s)
		if err != nil {
			return false, fmt.Errorf("%s: node-0 URL does not parse", f.name)
		}
		out, err := rebase(u, p.opts.ImageServiceURL)
		if err != nil {
			return false, fmt.Errorf("%s: image service %w", f.name, err)
		}
		if err := unstructured.SetNestedField(f.root, out, f.path...); err != nil {
			return false, err
		}
		statusMoved = statusMoved || f.status
		moved = true
	}
	if moved {
		detached := ""
		if _, ok := it.Object.GetAnnotations()[AnnotationBMHDetached]; ok {
			detached = "; the host is detached: BMAC leaves it alone"
		} else {
			detached = "; BMAC replaces spec.image with cluster 0's InfraEnv isoDownloadURL"
		}
		it.Note("image URLs moved onto the image service URL%s", detached)
	}
	return statusMoved, nil
}
