package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The node-0 services of the export below; none of them may survive a restore.
const (
	node0Service = "http://192.168.111.80:8090"
	node0Images  = "http://192.168.111.80:8888"
	node0Cluster = "b53c1137-37e7-4088-9787-9c892faaf8a9"
	node0Infra   = "6a3e9fb4-1d9b-4f0f-8d2e-2c4b5d6e7f80"
	node0Token   = "NODE0-TOKEN-PLANTED"
)

// node0Hosts are what a surviving node-0 URL would contain.
var node0Hosts = []string{"192.168.111.80", "assisted-service.assisted-installer.com", node0Token}

// node0Export builds, from the example CRs (harness.ExampleCRsDir), what
// node 0's API would export: status with node-0 URLs, server fields and owner
// references with node-0 UIDs. The fixtures are separate examples; the test
// ties them into one cluster (the SNO ClusterDeployment "single-node", its ACI,
// InfraEnv, NMStateConfig and the Agent) and spreads them over the fixtures'
// namespaces spoke-cluster, demo and agents. Every object carries the label
// kat-order=<id>, the ClusterImageSet's name ends with id.
func node0Export(t *testing.T, id string) []*unstructured.Unstructured {
	t.Helper()
	load := func(file string) []*unstructured.Unstructured {
		objs, err := harness.ReadObjects(filepath.Join(harness.ExampleCRsDir(), file))
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	one := func(file string) *unstructured.Unstructured { return load(file)[0] }
	set := func(o *unstructured.Unstructured, v any, path ...string) {
		if err := unstructured.SetNestedField(o.Object, v, path...); err != nil {
			t.Fatalf("%s: set %v: %v", o.GetName(), path, err)
		}
	}
	ownedBy := func(o *unstructured.Unstructured, apiVersion, kind, name string) {
		o.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
			"apiVersion": apiVersion, "kind": kind, "name": name, "uid": oldUID(kind, name), "blockOwnerDeletion": true}}
	}

	ns := one("namespace.yaml")
	set(ns, "Active", "status", "phase")

	cis := one("clusterImageSet.yaml")
	cis.SetName("openshift-v5.0.0-" + id)

	pull := one("pullsecret.yaml")

	cd := one("clusterDeployment.yaml")
	set(cd, true, "spec", "installed")
	set(cd, map[string]any{"clusterID": "11111111-2222-3333-4444-555555555555", "infraID": node0Cluster,
		"adminKubeconfigSecretRef": map[string]any{"name": "single-node-admin-kubeconfig"}}, "spec", "clusterMetadata")
	set(cd, "https://console-openshift-console.apps.test-cluster.hive.example.com", "status", "webConsoleURL")
	cd.SetFinalizers([]string{"hive.openshift.io/deprovision"})

	kubeconfig := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "single-node-admin-kubeconfig", "namespace": "spoke-cluster",
			"labels": map[string]any{"hive.openshift.io/cluster-deployment-name": "single-node", "hive.openshift.io/secret-type": "kubeconfig"}},
		"data": map[string]any{"kubeconfig": "a3ViZWNvbmZpZy1wbGFudGVk"}}}
	ownedBy(kubeconfig, "hive.openshift.io/v1", "ClusterDeployment", "single-node")

	aci := one("agentClusterInstall-SNO.yaml")
	set(aci, cis.GetName(), "spec", "imageSetRef", "name")
	ownedBy(aci, "hive.openshift.io/v1", "ClusterDeployment", "single-node")
	set(aci, map[string]any{
		"eventsURL": node0Service + "/api/assisted-install/v2/events?api_key=" + node0Token + "&cluster_id=" + node0Cluster,
		"logsURL":   node0Service + "/api/assisted-install/v2/clusters/" + node0Cluster + "/logs?api_key=" + node0Token,
		"state":     "finalizing"}, "status", "debugInfo")

	nmstate := one("nmstate.yaml")

	ie := one("infraEnv.yaml")
	set(ie, node0Images+"/byid/"+node0Infra+"/4.16/x86_64/full.iso?api_key="+node0Token, "status", "isoDownloadURL")
	set(ie, node0Service+"/api/assisted-install/v2/events?infra_env_id="+node0Infra, "status", "debugInfo", "eventsURL")

	agent := one("agent.yaml")
	set(agent, "single-node", "spec", "clusterDeploymentName", "name") // namespace stays "demo"
	labels := agent.GetLabels()
	labels["infraenvs.agent-install.openshift.io"] = "myinfraenv"
	agent.SetLabels(labels)
	ownedBy(agent, "agent-install.openshift.io/v1beta1", "InfraEnv", "myinfraenv")
	set(agent, node0Service+"/api/assisted-install/v2/events?api_key="+node0Token+"&host_id="+agent.GetName(), "status", "debugInfo", "eventsURL")

	bmh := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]any{"name": "okd-5", "namespace": "demo", "labels": map[string]any{"infraenvs.agent-install.openshift.io": "myinfraenv"}},
		"spec":     map[string]any{"online": true, "bmc": map[string]any{"address": "redfish-virtualmedia://10.0.0.5/redfish/v1/Systems/1", "credentialsName": "okd-5-bmc"}},
		"status": map[string]any{"operationalStatus": "detached", "errorCount": int64(0), "errorMessage": "", "hardwareProfile": "unknown",
			"poweredOn": true, "provisioning": map[string]any{"state": "provisioned", "ID": "abc"}}}}

	classification := one("agentClassification.yaml")

	objs := []*unstructured.Unstructured{classification, agent, bmh, ie, nmstate, aci, cd, kubeconfig, pull, cis, ns}
	for i, o := range objs {
		md := o.Object["metadata"].(map[string]any)
		md["uid"] = oldUID(o.GetKind(), o.GetName())
		md["resourceVersion"] = fmt.Sprint(400000 + i)
		md["generation"] = int64(2)
		md["creationTimestamp"] = "2025-10-15T17:10:55Z"
		md["managedFields"] = []any{map[string]any{"manager": "assisted-service", "operation": "Update", "apiVersion": o.GetAPIVersion()}}
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["kat-order"] = id
		o.SetLabels(l)
	}
	return objs
}

func oldUID(kind, name string) string {
	return "0ld00000-" + strings.ToLower(kind) + "-" + name
}

// mapping sends the fixtures' namespaces into one test namespace.
func mapping(target string) map[string]string {
	return map[string]string{"spoke-cluster": target, "demo": target, "agents": target}
}
