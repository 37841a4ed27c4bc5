// Package kubekeys writes the kube keys into a restored assisted-service
// database, so that cluster 0's controllers find the existing rows of the
// restored ClusterDeployments, InfraEnvs and Agents instead of registering
// duplicates with new UUIDs (research §2.2–§2.3). Node 0 ran in REST mode, so
// its rows carry no kube keys.
//
// FromObjects reads what the CRs say (names, target namespaces and every id
// they carry: spec.clusterMetadata, status URLs); Write matches each CR to
// exactly one row in a transaction, reports every CR without a row or with
// several candidates at once (changing nothing then), and sets
// clusters.kube_key_name/kube_key_namespace, infra_envs.name/kube_key_namespace
// and hosts.kube_key_namespace.
package kubekeys

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// Ref is a namespaced name on the target.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Cluster is a ClusterDeployment's kube key and the hints that find its row.
type Cluster struct {
	Ref
	ClusterName string // spec.clusterName: clusters.name
	BaseDomain  string // spec.baseDomain: clusters.base_dns_domain
	// IDs are assisted-service cluster ids the CRs carry: spec.clusterMetadata.infraID
	// of the CD and its ACI, ids in the ACI's and bound Agents' status URLs.
	IDs []string
	// OpenShiftIDs are spec.clusterMetadata.clusterID values: clusters.openshift_cluster_id.
	OpenShiftIDs []string
}

// InfraEnv is an InfraEnv's kube key and the hints that find its row.
type InfraEnv struct {
	Ref
	Cluster *Ref     // spec.clusterRef (nil: late binding)
	IDs     []string // ids in its status URLs
}

// Host is an Agent's kube key: the Agent name is the host id.
type Host struct {
	Ref
	InfraEnv string // the infraenvs.agent-install.openshift.io label
	Cluster  *Ref   // spec.clusterDeploymentName (nil: unbound)
}

// Targets are the kube keys a set of CRs needs.
type Targets struct {
	Clusters  []Cluster
	InfraEnvs []InfraEnv
	Hosts     []Host
}

// FromObjects reads the targets from exported CRs (with status, as node 0
// had them). mapNamespace turns a source namespace into the target one (nil:
// unchanged), like resources.Options.MapNamespace.
func FromObjects(objs []*unstructured.Unstructured, mapNamespace func(string) string) (Targets, error) {
	if mapNamespace == nil {
		mapNamespace = func(s string) string { return s }
	}
	var t Targets
	clusters := map[Ref]*Cluster{}
	var acis, agents, infraEnvs []*unstructured.Unstructured
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		switch {
		case gk.Group == "hive.openshift.io" && gk.Kind == "ClusterDeployment":
			c := &Cluster{Ref: Ref{mapNamespace(o.GetNamespace()), o.GetName()}}
			c.ClusterName, _, _ = unstructured.NestedString(o.Object, "spec", "clusterName")
			c.BaseDomain, _, _ = unstructured.NestedString(o.Object, "spec", "baseDomain")
			addMetadataIDs(c, o)
			if clusters[c.Ref] != nil {
				return Targets{}, fmt.Errorf("ClusterDeployment %s appears twice", c.Ref)
			}
			clusters[c.Ref] = c
		case gk.Group == "extensions.hive.openshift.io" && gk.Kind == "AgentClusterInstall":
			acis = append(acis, o)
		case gk.Group == "agent-install.openshift.io" && gk.Kind == "InfraEnv":
			infraEnvs = append(infraEnvs, o)
		case gk.Group == "agent-install.openshift.io" && gk.Kind == "Agent":
			agents = append(agents, o)
		}
	}
	for _, o := range acis {
		ns := mapNamespace(o.GetNamespace())
		cd, _, _ := unstructured.NestedString(o.Object, "spec", "clusterDeploymentRef", "name")
		if c := clusters[Ref{ns, cd}]; c != nil {
			addMetadataIDs(c, o)
			if id, _ := resources.IDsFromStatusURLs(o); id != "" {
				c.IDs = appendNew(c.IDs, id)
			}
		}
	}
	for _, o := range infraEnvs {
		ie := InfraEnv{Ref: Ref{mapNamespace(o.GetNamespace()), o.GetName()}, Cluster: ref(o, mapNamespace, "spec", "clusterRef")}
		if _, id := resources.IDsFromStatusURLs(o); id != "" {
			ie.IDs = append(ie.IDs, id)
		}
		t.InfraEnvs = append(t.InfraEnvs, ie)
	}
	for _, o := range agents {
		h := Host{Ref: Ref{mapNamespace(o.GetNamespace()), o.GetName()}, InfraEnv: o.GetLabels()[resources.LabelInfraEnv],
			Cluster: ref(o, mapNamespace, "spec", "clusterDeploymentName")}
		if h.Cluster != nil {
			if c := clusters[*h.Cluster]; c != nil {
				if id, _ := resources.IDsFromStatusURLs(o); id != "" {
					c.IDs = appendNew(c.IDs, id)
				}
			}
		}
		t.Hosts = append(t.Hosts, h)
	}
	for _, c := range clusters {
		t.Clusters = append(t.Clusters, *c)
	}
	sort.Slice(t.Clusters, func(i, j int) bool { return t.Clusters[i].Ref.String() < t.Clusters[j].Ref.String() })
	sort.Slice(t.InfraEnvs, func(i, j int) bool { return t.InfraEnvs[i].Ref.String() < t.InfraEnvs[j].Ref.String() })
	sort.Slice(t.Hosts, func(i, j int) bool { return t.Hosts[i].Ref.String() < t.Hosts[j].Ref.String() })
	return t, nil
}

func addMetadataIDs(c *Cluster, o *unstructured.Unstructured) {
	if id, _, _ := unstructured.NestedString(o.Object, "spec", "clusterMetadata", "infraID"); id != "" {
		c.IDs = appendNew(c.IDs, id)
	}
	if id, _, _ := unstructured.NestedString(o.Object, "spec", "clusterMetadata", "clusterID"); id != "" {
		c.OpenShiftIDs = appendNew(c.OpenShiftIDs, id)
	}
}

// ref reads a {name, namespace} reference; an empty namespace means the
// object's own.
func ref(o *unstructured.Unstructured, mapNamespace func(string) string, path ...string) *Ref {
	name, _, _ := unstructured.NestedString(o.Object, append(path, "name")...)
	if name == "" {
		return nil
	}
	ns, _, _ := unstructured.NestedString(o.Object, append(path, "namespace")...)
	if ns == "" {
		ns = o.GetNamespace()
	}
	return &Ref{mapNamespace(ns), name}
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
