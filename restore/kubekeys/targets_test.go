package kubekeys

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func objs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func TestFromObjects(t *testing.T) {
	in := objs(t, `
apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata: {name: demo, namespace: src}
spec: {clusterName: demo, baseDomain: example.com, clusterMetadata: {infraID: 11111111-1111-1111-1111-111111111111, clusterID: ocp-1}}
`, `
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {name: demo, namespace: src}
spec: {clusterDeploymentRef: {name: demo}}
status: {debugInfo: {eventsURL: "http://n0:8090/api/assisted-install/v2/events?cluster_id=22222222-2222-2222-2222-222222222222&api_key=x"}}
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: demo-ie, namespace: src}
spec: {clusterRef: {name: demo, namespace: src}}
status: {isoDownloadURL: "http://n0:8888/byid/33333333-3333-3333-3333-333333333333/4.16/x86_64/full.iso"}
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata: {name: 44444444-4444-4444-4444-444444444444, namespace: src, labels: {infraenvs.agent-install.openshift.io: demo-ie}}
spec: {clusterDeploymentName: {name: demo}}
status: {debugInfo: {logsURL: "http://n0:8090/api/assisted-install/v2/clusters/55555555-5555-5555-5555-555555555555/logs?host_id=x"}}
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata: {name: 66666666-6666-6666-6666-666666666666, namespace: src}
spec: {}
`)
	got, err := FromObjects(in, func(ns string) string {
		if ns == "src" {
			return "dst"
		}
		return ns
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Targets{
		Clusters: []Cluster{{Ref: Ref{"dst", "demo"}, ClusterName: "demo", BaseDomain: "example.com",
			IDs:          []string{"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222", "55555555-5555-5555-5555-555555555555"},
			OpenShiftIDs: []string{"ocp-1"}}},
		InfraEnvs: []InfraEnv{{Ref: Ref{"dst", "demo-ie"}, Cluster: &Ref{"dst", "demo"}, IDs: []string{"33333333-3333-3333-3333-333333333333"}}},
		Hosts: []Host{
			{Ref: Ref{"dst", "44444444-4444-4444-4444-444444444444"}, InfraEnv: "demo-ie", Cluster: &Ref{"dst", "demo"}},
			{Ref: Ref{"dst", "66666666-6666-6666-6666-666666666666"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets:\n got %+v\nwant %+v", got, want)
	}
}
