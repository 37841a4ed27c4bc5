package resources

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
)

func secret(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "dg=="}}}
}

func TestClusterSource_LocalAuthSecret(t *testing.T) {
	ctx := context.Background()
	client := func(objs ...runtime.Object) *dynfake.FakeDynamicClient {
		return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			gvrSecret: "SecretList", gvrConfigMap: "ConfigMapList", gvrNamespace: "NamespaceList", gvrClusterImageSet: "ClusterImageSetList",
			{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"}:                   "ClusterDeploymentList",
			{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"}: "AgentClusterInstallList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "nmstateconfigs"}:         "NMStateConfigList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"}:              "InfraEnvList",
			{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}:                         "BareMetalHostList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"}:                 "AgentList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentclassifications"}:   "AgentClassificationList",
		}, objs...)
	}
	has := func(objs []*unstructured.Unstructured) string {
		for _, o := range objs {
			if o.GetName() == LocalAuthSecretName {
				return o.GetNamespace()
			}
		}
		return ""
	}
	c := client(secret("mce", LocalAuthSecretName), secret("mce", "other"))
	for _, tc := range []struct {
		src  ClusterSource
		want string
	}{
		{ClusterSource{Client: c}, ""}, // not asked for (unencrypted layer)
		{ClusterSource{Client: c, LocalAuth: true}, "mce"},
		{ClusterSource{Client: c, LocalAuth: true, LocalAuthNamespace: "mce"}, "mce"},
	} {
		objs, err := tc.src.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := has(objs); got != tc.want {
			t.Errorf("LocalAuth=%v ns=%q: local-auth Secret from %q, want %q", tc.src.LocalAuth, tc.src.LocalAuthNamespace, got, tc.want)
		}
	}
	two := client(secret("a", LocalAuthSecretName), secret("b", LocalAuthSecretName))
	if _, err := (&ClusterSource{Client: two, LocalAuth: true}).Collect(ctx); err == nil || !strings.Contains(err.Error(), "--local-auth-namespace") {
		t.Errorf("two services: err = %v", err)
	}
	if _, err := (&ClusterSource{Client: c, LocalAuth: true, LocalAuthNamespace: "absent"}).Collect(ctx); err == nil {
		t.Error("a named namespace without the Secret must fail")
	}
}
