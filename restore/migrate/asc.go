package migrate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var (
	// ASCResource is the AgentServiceConfig's API resource.
	ASCResource = schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}
	// ASCName is the only name the operator reconciles.
	ASCName = "agent"
	// ServiceDeployment is the operator's assisted-service Deployment.
	ServiceDeployment = "assisted-service"
)

// AgentServiceConfig is the part of an AgentServiceConfig migrate checks.
type AgentServiceConfig struct {
	Object                       *unstructured.Unstructured
	DatabaseSize, FilesystemSize resource.Quantity
	// Source names where it came from, for messages.
	Source string
}

// ParseAgentServiceConfig reads an AgentServiceConfig manifest (YAML or
// JSON); source names it in errors.
func ParseAgentServiceConfig(data []byte, source string) (*AgentServiceConfig, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	if u.GetKind() != "AgentServiceConfig" || u.GroupVersionKind().Group != ASCResource.Group {
		return nil, fmt.Errorf("%s: want an AgentServiceConfig (%s), got %q", source, ASCResource.Group, u.GetAPIVersion()+" "+u.GetKind())
	}
	if u.GetName() != ASCName {
		return nil, fmt.Errorf("%s: the operator only reconciles the AgentServiceConfig named %q, not %q", source, ASCName, u.GetName())
	}
	a := &AgentServiceConfig{Object: u, Source: source}
	for _, f := range []struct {
		field string
		q     *resource.Quantity
	}{{"databaseStorage", &a.DatabaseSize}, {"filesystemStorage", &a.FilesystemSize}} {
		s, _, _ := unstructured.NestedString(u.Object, "spec", f.field, "resources", "requests", "storage")
		if s == "" {
			return nil, fmt.Errorf("%s: spec.%s.resources.requests.storage is required", source, f.field)
		}
		v, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.%s storage %q: %v", source, f.field, s, err)
		}
		*f.q = v
	}
	return a, nil
}
