package resources

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzNewPlan feeds arbitrary JSON objects to the planner: it may refuse
// them, never panic.
func FuzzNewPlan(f *testing.F) {
	f.Add(`[{"apiVersion":"agent-install.openshift.io/v1beta1","kind":"Agent","metadata":{"name":"a","namespace":"n","ownerReferences":[{"kind":"InfraEnv","name":"i"}]},"status":{"debugInfo":{"eventsURL":"http://x:1/clusters/b53c1137-37e7-4088-9787-9c892faaf8a9/logs"}}}]`)
	f.Add(`[{"apiVersion":"metal3.io/v1alpha1","kind":"BareMetalHost","metadata":{"name":"b","namespace":"n","annotations":{"baremetalhost.metal3.io/status":"{"}}}]`)
	f.Add(`[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"n"},"stringData":{"k":1}}]`)
	f.Add(`[{"apiVersion":"hive.openshift.io/v1","kind":"ClusterDeployment","metadata":"x","spec":[]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		var raw []map[string]any
		if json.Unmarshal([]byte(in), &raw) != nil {
			return
		}
		var objs []*unstructured.Unstructured
		for _, m := range raw {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
		_, _ = NewPlan(objs, Options{NamespaceMapping: map[string]string{"n": "m"}, ServiceURL: "https://svc", Signer: fakeSigner{}, SkipUnknownKinds: true})
	})
}
