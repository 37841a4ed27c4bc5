package resources

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objectRef is a referenced Secret or ConfigMap.
type objectRef struct {
	configMap bool
	namespace string
	name      string
}

// secretReferenceKeys are "...Reference" fields that name Secrets (the
// ...SecretRef and ...ConfigMapRef(s) fields are recognised by their suffix).
var secretReferenceKeys = map[string]bool{
	"ignitionEndpointTokenReference": true,
	"caCertificateReference":         true,
}

// references walks obj's spec and returns the Secrets and ConfigMaps it names,
// sorted. The field names follow the CRDs: *SecretRef{name[,namespace]},
// *ConfigMapRef{name}, manifestsConfigMapRefs[{name}], BareMetalHost's
// bmc.credentialsName, and the ACI's ignitionEndpoint references.
func references(obj *unstructured.Unstructured) []objectRef {
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return nil
	}
	set := map[objectRef]bool{}
	walkRefs(spec, obj.GetNamespace(), set)
	return sortedRefs(set)
}

// sortedRefs lists a set of references: Secrets before ConfigMaps, then by
// namespace and name.
func sortedRefs(m map[objectRef]bool) []objectRef {
	refs := make([]objectRef, 0, len(m))
	for r := range m {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.configMap != b.configMap {
			return !a.configMap
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
	return refs
}

func walkRefs(v any, ns string, set map[objectRef]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			switch {
			case k == "credentialsName":
				if s, ok := val.(string); ok && s != "" {
					set[objectRef{namespace: ns, name: s}] = true
				}
			case strings.HasSuffix(k, "SecretRef") || secretReferenceKeys[k]:
				addRef(val, ns, false, set)
			case strings.HasSuffix(k, "ConfigMapRef"):
				addRef(val, ns, true, set)
			case strings.HasSuffix(k, "ConfigMapRefs"):
				if list, ok := val.([]any); ok {
					for _, item := range list {
						addRef(item, ns, true, set)
					}
				}
			default:
				walkRefs(val, ns, set)
			}
		}
	case []any:
		for _, item := range t {
			walkRefs(item, ns, set)
		}
	}
}

func addRef(v any, ns string, configMap bool, set map[objectRef]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	name, _ := m["name"].(string)
	if name == "" {
		return
	}
	if n, _ := m["namespace"].(string); n != "" {
		ns = n
	}
	set[objectRef{configMap: configMap, namespace: ns, name: name}] = true
}
