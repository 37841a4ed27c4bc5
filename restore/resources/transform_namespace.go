package resources

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// namespaceRef is a field that holds a namespace inside an object of one kind.
type namespaceRef struct {
	Group, Kind string
	Path        []string
}

// NamespaceRefs are the namespace fields inside specs that a namespace mapping
// rewrites: every spec property named "namespace" of the upstream CRDs of the
// moved kinds (test/harness TestNamespaceRefs_CoverTheCRDs checks the list
// against the CRDs the suite installs). Velero's namespace mapping misses
// exactly these.
var NamespaceRefs = []namespaceRef{
	{"agent-install.openshift.io", "Agent", []string{"spec", "clusterDeploymentName", "namespace"}},
	{"agent-install.openshift.io", "Agent", []string{"spec", "ignitionEndpointTokenReference", "namespace"}},
	{"agent-install.openshift.io", "InfraEnv", []string{"spec", "clusterRef", "namespace"}},
	{"agent-install.openshift.io", "InfraEnv", []string{"spec", "mirrorRegistryRef", "namespace"}},
	{"extensions.hive.openshift.io", "AgentClusterInstall", []string{"spec", "ignitionEndpoint", "caCertificateReference", "namespace"}},
	{"extensions.hive.openshift.io", "AgentClusterInstall", []string{"spec", "mirrorRegistryRef", "namespace"}},
	{"hive.openshift.io", "ClusterDeployment", []string{"spec", "clusterPoolRef", "namespace"}},
	{"metal3.io", "BareMetalHost", []string{"spec", "consumerRef", "namespace"}},
	{"metal3.io", "BareMetalHost", []string{"spec", "metaData", "namespace"}},
	{"metal3.io", "BareMetalHost", []string{"spec", "networkData", "namespace"}},
	{"metal3.io", "BareMetalHost", []string{"spec", "userData", "namespace"}},
}

// LabelClusterDeploymentNamespace is the label the Agent controller puts on
// Agents with their ClusterDeployment's namespace.
const LabelClusterDeploymentNamespace = "agent-install.openshift.io/clusterdeployment-namespace"

// MapNamespaces rewrites namespaces by Options.NamespaceMapping: the object's
// own namespace (a Namespace's name), the namespace fields of spec references
// (NamespaceRefs), the Agent's cluster-deployment-namespace label and the
// credential namespaces inside a BareMetalHost's status annotation.
type MapNamespaces struct{}

func (MapNamespaces) Name() string                                  { return "map-namespaces" }
func (MapNamespaces) AppliesTo(obj *unstructured.Unstructured) bool { return true }
func (MapNamespaces) Transform(it *Item, p *Plan) error {
	if len(p.opts.NamespaceMapping) == 0 {
		return nil
	}
	o := it.Object
	if kindIs(o, "", "Namespace") {
		o.SetName(p.opts.MapNamespace(o.GetName()))
	} else if ns := o.GetNamespace(); ns != "" {
		o.SetNamespace(p.opts.MapNamespace(ns))
	}
	gk := o.GroupVersionKind().GroupKind()
	for _, ref := range NamespaceRefs {
		if ref.Group != gk.Group || ref.Kind != gk.Kind {
			continue
		}
		ns, found, err := unstructured.NestedString(o.Object, ref.Path...)
		if err != nil {
			return err
		}
		if found && ns != "" {
			if err := unstructured.SetNestedField(o.Object, p.opts.MapNamespace(ns), ref.Path...); err != nil {
				return err
			}
		}
	}
	if labels := o.GetLabels(); labels[LabelClusterDeploymentNamespace] != "" {
		labels[LabelClusterDeploymentNamespace] = p.opts.MapNamespace(labels[LabelClusterDeploymentNamespace])
		o.SetLabels(labels)
	}
	if kindIs(o, "metal3.io", "BareMetalHost") {
		return mapBMHStatusAnnotation(o, p)
	}
	return nil
}

func mapBMHStatusAnnotation(o *unstructured.Unstructured, p *Plan) error {
	ann := o.GetAnnotations()
	raw, ok := ann[AnnotationBMHStatus]
	if !ok {
		return nil
	}
	var status map[string]any
	if err := json.Unmarshal([]byte(raw), &status); err != nil {
		return fmt.Errorf("annotation %s: %w", AnnotationBMHStatus, err)
	}
	changed := false
	for _, f := range []string{"goodCredentials", "triedCredentials"} {
		ns, found, _ := unstructured.NestedString(status, f, "credentials", "namespace")
		if found && ns != "" && p.opts.MapNamespace(ns) != ns {
			_ = unstructured.SetNestedField(status, p.opts.MapNamespace(ns), f, "credentials", "namespace")
			changed = true
		}
	}
	if !changed {
		return nil
	}
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	ann[AnnotationBMHStatus] = string(b)
	o.SetAnnotations(ann)
	return nil
}
