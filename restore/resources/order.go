package resources

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Step is one row of the restore order table: a kind, where it goes, and why.
type Step struct {
	Group      string
	Kind       string
	Resource   string // plural, lower case: the REST resource name
	Namespaced bool
	Reason     string
}

// GroupKind is the step's group and kind.
func (s Step) GroupKind() schema.GroupKind { return schema.GroupKind{Group: s.Group, Kind: s.Kind} }

// Order is the documented restore order. Objects are applied step by step, in
// this order; a kind that is not listed is never applied. The reasons come from
// how assisted-service's controllers, webhooks and the metal3 operator behave
// (../shared/research/migration-anchors.md §2.2–§2.5).
var Order = []Step{
	{Group: "hive.openshift.io", Kind: "ClusterImageSet", Resource: "clusterimagesets",
		Reason: "cluster-scoped and referenced by AgentClusterInstall.spec.imageSetRef, which the ACI controller must resolve"},
	{Kind: "Namespace", Resource: "namespaces",
		Reason: "every namespaced object below lives in one"},
	{Kind: "Secret", Resource: "secrets", Namespaced: true,
		Reason: "the pull secret, admin kubeconfig/password and CA Secrets are read by the CD, ACI and InfraEnv controllers on their first reconcile"},
	{Kind: "ConfigMap", Resource: "configmaps", Namespaced: true,
		Reason: "ACI manifests and mirror-registry ConfigMaps are read on the first reconcile of the ACI and InfraEnv"},
	{Group: "hive.openshift.io", Kind: "ClusterDeployment", Resource: "clusterdeployments", Namespaced: true,
		Reason: "the root of a cluster: its DB row is found by its name/namespace (kube key); ACI, InfraEnv and Agents reference it, and it owns the ACI and the credential Secrets"},
	{Group: "extensions.hive.openshift.io", Kind: "AgentClusterInstall", Resource: "agentclusterinstalls", Namespaced: true,
		Reason: "references its ClusterDeployment and ClusterImageSet; the CD controller does nothing while the ACI is missing"},
	{Group: "agent-install.openshift.io", Kind: "NMStateConfig", Resource: "nmstateconfigs", Namespaced: true,
		Reason: "selected by the InfraEnv's label selector: it must exist before the InfraEnv's first static-network and ISO computation"},
	{Group: "agent-install.openshift.io", Kind: "InfraEnv", Resource: "infraenvs", Namespaced: true,
		Reason: "references its ClusterDeployment (spec.clusterRef) and owns the Agents; its DB row is found by name/namespace"},
	{Group: "metal3.io", Kind: "BareMetalHost", Resource: "baremetalhosts", Namespaced: true,
		Reason: "only with its baremetalhost.metal3.io/status annotation and paused, so the Bare Metal Operator does not re-provision an installed host; labelled with the InfraEnv above"},
	{Group: "agent-install.openshift.io", Kind: "Agent", Resource: "agents", Namespaced: true,
		Reason: "needs its InfraEnv (owner, label) and ClusterDeployment (spec.clusterDeploymentName) in place, or the Agent controller unbinds or re-creates its host"},
	{Group: "agent-install.openshift.io", Kind: "AgentClassification", Resource: "agentclassifications", Namespaced: true,
		Reason: "independent of the others: it only labels Agents, so it goes last"},
}

// StepIndex returns the position of obj's kind in Order, or -1 for a kind that
// is never restored.
func StepIndex(obj *unstructured.Unstructured) int {
	gk := obj.GroupVersionKind().GroupKind()
	for i, s := range Order {
		if s.GroupKind() == gk {
			return i
		}
	}
	return -1
}

func stepFor(gk schema.GroupKind) (Step, bool) {
	for _, s := range Order {
		if s.GroupKind() == gk {
			return s, true
		}
	}
	return Step{}, false
}
