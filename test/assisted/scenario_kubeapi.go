package assisted

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// KubeAPI describes a node 0 that ran assisted-service with a Kubernetes API
// (kube-api mode): its controllers registered the scenario's CRs, so the rows
// carry kube keys, and the CRs hold what no column does.
type KubeAPI struct {
	// Namespace holds node 0's CRs.
	Namespace string
	// ClusterStatus and HostStatus are the install stage (clusters.status,
	// hosts.status): e.g. "ready"/"known", "installing"/"installing-in-progress".
	ClusterStatus, HostStatus string
}

// Facts of kube-api mode, from openshift/assisted-service (master,
// 063b257950f726d6b291dc94b806bc243a1b56de):
//   - clusters.kube_key_name/kube_key_namespace are the ClusterDeployment's
//     name and namespace (internal/cluster/cluster.go GetClusterByKubeKey);
//     infra_envs.name is the InfraEnv's name and kube_key_namespace its
//     namespace (internal/bminventory/inventory.go GetInfraEnvByKubeKey);
//     hosts.kube_key_namespace is the Agent's namespace, the Agent named after
//     the host (internal/host/host.go GetHostByKubeKey;
//     internal/controller/controllers/crd_utils.go CreateAgentCR, UpdateKubeKeyNS).
//   - An InfraEnv without spec.imageType is registered with the controller's
//     ISO_IMAGE_TYPE, default minimal-iso (internal/controller/controllers/
//     infraenv_controller.go InfraEnvConfig, internal/infraenv/iso_image_type.go),
//     where ABI's REST registration uses full-iso (ScenarioRows).
//   - The Agent the service creates carries the InfraEnv label and the
//     InfraEnv's spec.agentLabels (crd_utils.go CreateAgentCR).
//   - spec.hostname, when set, is stored as hosts.requested_hostname
//     (agent_controller.go updateIfNeeded); a host without it keeps the
//     inventory's name only, and requested_hostname stays empty.
const kubeAPIDefaultImageType = "minimal-iso"

// KubeAPIRows are the rows such a node 0 holds for s at the given stage.
func KubeAPIRows(s Scenario, k KubeAPI) ([]ScenarioRow, error) {
	rows, err := ScenarioRows(s)
	if err != nil {
		return nil, err
	}
	objs := scenarioIndex(k.Objects(s))
	cd, ie := objs.one("ClusterDeployment"), objs.one("InfraEnv")
	named := map[string]bool{}
	for _, a := range objs.all("Agent") {
		if str(a, "spec", "hostname") != "" {
			named[a.GetName()] = true
		}
	}
	for _, r := range rows {
		switch r.Table {
		case "clusters":
			r.Values["kube_key_name"], r.Values["kube_key_namespace"] = cd.GetName(), k.Namespace
			r.Values["status"], r.Values["status_info"] = k.ClusterStatus, "set by the test"
		case "infra_envs":
			r.Values["name"], r.Values["kube_key_namespace"] = ie.GetName(), k.Namespace
			if str(ie, "spec", "imageType") == "" {
				r.Values["type"] = kubeAPIDefaultImageType
			}
		case "hosts":
			r.Values["kube_key_namespace"], r.Values["status"] = k.Namespace, k.HostStatus
			r.Values["approved"] = true
			if k.HostStatus != "installing-in-progress" {
				// No install progress before the installation (ScenarioRows
				// stands at the moment before node 0 reboots).
				for _, c := range []string{"progress_current_stage", "progress_installation_percentage", "progress_stage_started_at", "progress_stage_updated_at"} {
					delete(r.Values, c)
				}
				r.Values["status_info"] = "set by the test"
				if k.HostStatus == "known" {
					// release-4.19 internal/host/common.go statusInfoKnown
					r.Values["status_info"] = "Host is ready to be installed"
				}
			}
			if id, _ := r.Values["id"].(string); !named[id] {
				r.Values["requested_hostname"] = ""
			}
		}
	}
	return rows, nil
}

// Objects are node 0's CRs for s: the scenario's objects in k.Namespace, plus
// an Agent per host, with the fields a user or ACM sets that no column holds:
// the ACI on hold, an agentSelector and labels on the ClusterDeployment, the
// InfraEnv's agentLabels, the Agents' labels and, for all but the last host,
// spec.hostname.
func (k KubeAPI) Objects(s Scenario) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	var cdName, ieName string
	for _, o := range s.Objects {
		o = o.DeepCopy()
		if o.GetNamespace() != "" {
			o.SetNamespace(k.Namespace)
		}
		moveNamespaces(o.Object["spec"], k.Namespace)
		switch o.GetKind() {
		case "ClusterDeployment":
			cdName = o.GetName()
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"site": "edge-7", "cluster-name": o.GetName()},
				"spec", "platform", "agentBareMetal", "agentSelector", "matchLabels")
			o.SetLabels(map[string]string{"cluster.open-cluster-management.io/clusterset": "edge"})
		case "AgentClusterInstall":
			_ = unstructured.SetNestedField(o.Object, true, "spec", "holdInstallation")
		case "InfraEnv":
			ieName = o.GetName()
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"site": "edge-7"}, "spec", "agentLabels")
		}
		out = append(out, o)
	}
	for i, h := range s.Hosts {
		spec := map[string]any{
			"approved": true, "role": h.Role,
			"clusterDeploymentName": map[string]any{"name": cdName, "namespace": k.Namespace},
		}
		if i < len(s.Hosts)-1 {
			spec["hostname"] = h.Hostname
		}
		a := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
			"metadata": map[string]any{"name": h.ID, "namespace": k.Namespace,
				"labels": map[string]any{"infraenvs.agent-install.openshift.io": ieName, "site": "edge-7"}},
			"spec": spec,
		}}
		out = append(out, a)
	}
	return out
}

// moveNamespaces points every namespaced reference of a spec at ns.
func moveNamespaces(v any, ns string) {
	switch t := v.(type) {
	case map[string]any:
		for key, e := range t {
			if _, ok := e.(string); ok && key == "namespace" {
				t[key] = ns
				continue
			}
			moveNamespaces(e, ns)
		}
	case []any:
		for _, e := range t {
			moveNamespaces(e, ns)
		}
	}
}

// String names the stage for test names.
func (k KubeAPI) String() string {
	return fmt.Sprintf("%s/%s", strings.ReplaceAll(k.ClusterStatus, "-", ""), k.HostStatus)
}
