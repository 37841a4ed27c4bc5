package resources

import (
	"encoding/json"

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
type BareMetalHostStatus struct{}

func (BareMetalHostStatus) Name() string { return "baremetalhost-status" }
func (BareMetalHostStatus) AppliesTo(obj *unstructured.Unstructured) bool {
	return kindIs(obj, "metal3.io", "BareMetalHost")
}
func (BareMetalHostStatus) Transform(it *Item, _ *Plan) error {
	ann := it.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if _, ok := ann[AnnotationBMHStatus]; !ok {
		status, found, _ := unstructured.NestedMap(it.Source.Object, "status")
		if !found || len(status) == 0 {
			it.Skip = "no status to restore (annotation " + AnnotationBMHStatus + " or status): the host would be provisioned again"
			return nil
		}
		b, err := json.Marshal(status)
		if err != nil {
			return err
		}
		ann[AnnotationBMHStatus] = string(b)
		it.Note("status carried in annotation %s", AnnotationBMHStatus)
	}
	ann[AnnotationBMHPaused] = ""
	it.Object.SetAnnotations(ann)
	return nil
}
