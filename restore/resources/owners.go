package resources

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Labels hive and assisted-service put on objects that belong to a cluster.
const (
	LabelClusterDeploymentName = "hive.openshift.io/cluster-deployment-name"
	LabelInfraEnv              = "infraenvs.agent-install.openshift.io"
)

// OwnerLinks turns the exported owner references (node-0 UIDs) into links by
// owner name, resolved to the new UIDs when the owner exists on the target. It
// also adds the links the controllers rely on when the export lacks them:
// ClusterDeployment -> AgentClusterInstall (spec.clusterDeploymentRef),
// InfraEnv -> Agent (the infraenvs label), ClusterDeployment -> its credential
// Secrets (the cluster-deployment-name label or spec.clusterMetadata refs).
// Owners are always in the object's own namespace.
type OwnerLinks struct{}

func (OwnerLinks) Name() string                                  { return "owner-links" }
func (OwnerLinks) AppliesTo(obj *unstructured.Unstructured) bool { return true }
func (OwnerLinks) Transform(it *Item, p *Plan) error {
	yes := true
	add := func(l OwnerLink) {
		for _, have := range it.Owners {
			if have.Kind == l.Kind && have.Name == l.Name && groupOf(have.APIVersion) == groupOf(l.APIVersion) {
				return
			}
		}
		it.Owners = append(it.Owners, l)
	}
	for _, ref := range it.Source.GetOwnerReferences() {
		add(OwnerLink{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion})
	}
	o := it.Object
	switch {
	case kindIs(o, "extensions.hive.openshift.io", "AgentClusterInstall"):
		if cd, _, _ := unstructured.NestedString(o.Object, "spec", "clusterDeploymentRef", "name"); cd != "" {
			add(OwnerLink{APIVersion: "hive.openshift.io/v1", Kind: "ClusterDeployment", Name: cd})
		}
	case kindIs(o, "agent-install.openshift.io", "Agent"):
		if ie := o.GetLabels()[LabelInfraEnv]; ie != "" {
			add(OwnerLink{APIVersion: "agent-install.openshift.io/v1beta1", Kind: "InfraEnv", Name: ie})
		}
	case kindIs(o, "", "Secret"):
		if cd := credentialOwner(o, p); cd != "" {
			add(OwnerLink{APIVersion: "hive.openshift.io/v1", Kind: "ClusterDeployment", Name: cd, BlockOwnerDeletion: &yes})
		}
	}
	return nil
}

// credentialOwner is the ClusterDeployment a Secret holds credentials of, or "".
func credentialOwner(secret *unstructured.Unstructured, p *Plan) string {
	if cd := secret.GetLabels()[LabelClusterDeploymentName]; cd != "" {
		return cd
	}
	for _, it := range p.Items {
		cd := it.Source
		if !kindIs(cd, "hive.openshift.io", "ClusterDeployment") || p.opts.MapNamespace(cd.GetNamespace()) != secret.GetNamespace() {
			continue
		}
		for _, f := range []string{"adminKubeconfigSecretRef", "adminPasswordSecretRef"} {
			if n, _, _ := unstructured.NestedString(cd.Object, "spec", "clusterMetadata", f, "name"); n != "" && n == secret.GetName() {
				return cd.GetName()
			}
		}
	}
	return ""
}

func groupOf(apiVersion string) string {
	for i := 0; i < len(apiVersion); i++ {
		if apiVersion[i] == '/' {
			return apiVersion[:i]
		}
	}
	return ""
}
