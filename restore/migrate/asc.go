package migrate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	Object *unstructured.Unstructured
	// DatabaseStorage and FilesystemStorage are spec.databaseStorage and
	// spec.filesystemStorage: the operator creates its PVCs with exactly
	// these specs, and so does the restore Job.
	DatabaseStorage, FilesystemStorage corev1.PersistentVolumeClaimSpec
	// DatabaseSize and FilesystemSize are their storage requests.
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
		spec  *corev1.PersistentVolumeClaimSpec
		q     *resource.Quantity
	}{{"databaseStorage", &a.DatabaseStorage, &a.DatabaseSize}, {"filesystemStorage", &a.FilesystemStorage, &a.FilesystemSize}} {
		m, _, _ := unstructured.NestedMap(u.Object, "spec", f.field)
		if m == nil {
			return nil, fmt.Errorf("%s: spec.%s is required", source, f.field)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, f.spec, true); err != nil {
			return nil, fmt.Errorf("%s: spec.%s is not a PersistentVolumeClaim spec: %v", source, f.field, err)
		}
		v, ok := f.spec.Resources.Requests[corev1.ResourceStorage]
		if !ok || v.IsZero() {
			return nil, fmt.Errorf("%s: spec.%s.resources.requests.storage is required", source, f.field)
		}
		*f.q = v
	}
	return a, nil
}
