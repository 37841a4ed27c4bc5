// Package resources is the resources layer of a bundle: the assisted-service
// custom resources of node 0 and the Secrets and ConfigMaps they reference,
// either exported from an API server (FromCluster) or read from the
// agent-based installer's manifest files (FromDir). The layer is a tar of
// JSON or YAML documents; Decode turns it back into objects.
package resources

import "k8s.io/apimachinery/pkg/runtime/schema"

// Summary says what the layer holds. It names kinds and namespaces, never
// object content.
type Summary struct {
	// From is "cluster", "manifests" or "local-auth" (a layer that holds
	// only node 0's local-auth key, from its service's env file).
	From       string         `json:"from"`
	Namespaces []string       `json:"namespaces,omitempty"`
	Objects    int            `json:"objects"`
	Kinds      map[string]int `json:"kinds,omitempty"`
}

// Sources of the layer.
const (
	FromClusterName   = "cluster"
	FromManifestsName = "manifests"
	FromLocalAuthName = "local-auth"
)

// Tar entry prefixes: exported objects and manifest files never mix.
const (
	clusterPrefix   = "cluster/"
	manifestsPrefix = "manifests/"
	clusterScoped   = "_cluster"
)

// Namespaced assisted-service kinds exported per namespace, in restore order.
var namespacedKinds = []schema.GroupVersionResource{
	{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"},
	{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"},
	{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "nmstateconfigs"},
	{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"},
	{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"},
	{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"},
	{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentclassifications"},
}

var (
	gvrSecret          = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrConfigMap       = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrNamespace       = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrClusterImageSet = schema.GroupVersionResource{Group: "hive.openshift.io", Version: "v1", Resource: "clusterimagesets"}
)
