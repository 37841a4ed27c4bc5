package recreate

import (
	"encoding/base64"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// API groups and kinds of the objects this package builds.
const (
	hiveV1       = "hive.openshift.io/v1"
	hiveExtV1b1  = "extensions.hive.openshift.io/v1beta1"
	agentV1b1    = "agent-install.openshift.io/v1beta1"
	kindCD       = "ClusterDeployment"
	kindACI      = "AgentClusterInstall"
	kindCIS      = "ClusterImageSet"
	kindInfraEnv = "InfraEnv"
	kindNMState  = "NMStateConfig"
	kindAgent    = "Agent"
	kindSecret   = "Secret"
	kindCM       = "ConfigMap"

	// LabelInfraEnv ties Agents and NMStateConfigs to their InfraEnv.
	LabelInfraEnv = "infraenvs.agent-install.openshift.io"
	// AnnotationSkipSpokeCleanup keeps the Agent controller from removing the
	// Node of an Agent that is deleted; cluster 0's nodes are its own.
	AnnotationSkipSpokeCleanup = "agent.agent-install.openshift.io/skip-spoke-cleanup"
	// AnnotationInstallConfigOverrides carries clusters.install_config_overrides.
	AnnotationInstallConfigOverrides = "agent-install.openshift.io/install-config-overrides"
	// AnnotationIgnoredClusterValidations and AnnotationIgnoredHostValidations
	// carry clusters.ignored_*_validations as comma-separated IDs.
	AnnotationIgnoredClusterValidations = "agent-install.openshift.io/ignored-cluster-validations"
	AnnotationIgnoredHostValidations    = "agent-install.openshift.io/ignored-host-validations"
	// LabelClusterConsumer carries clusters.tags.
	LabelClusterConsumer = "agentclusterinstalls.agent-install.openshift.io/consumer"
	labelWatch           = "agent-install.openshift.io/watch"

	pullSecretKey    = ".dockerconfigjson"
	ignitionTokenKey = "ignition-token"
	registriesKey    = "registries.conf"
	caBundleKey      = "ca-bundle.crt"
)

type m = map[string]any

func newObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	meta := m{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return &unstructured.Unstructured{Object: m{"apiVersion": apiVersion, "kind": kind, "metadata": meta}}
}

func newSecret(namespace, name, typ string, data map[string]string) *unstructured.Unstructured {
	s := newObject("v1", kindSecret, namespace, name)
	enc := m{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	s.Object["type"] = typ
	s.Object["data"] = enc
	return s
}

// set stores v at the dotted path in o, creating maps on the way.
func set(o *unstructured.Unstructured, path string, v any) {
	keys := strings.Split(path, ".")
	cur := o.Object
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = m{}
			cur[k] = next
		}
		cur = next
	}
	cur[keys[len(keys)-1]] = v
}

// get reads the value at the dotted path, nil when absent.
func get(o *unstructured.Unstructured, path string) any {
	var cur any = o.Object
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func getString(o *unstructured.Unstructured, path string) string {
	s, _ := get(o, path).(string)
	return s
}

func getMap(o *unstructured.Unstructured, path string) map[string]any {
	mm, _ := get(o, path).(map[string]any)
	return mm
}

func getSlice(o *unstructured.Unstructured, path string) []any {
	s, _ := get(o, path).([]any)
	return s
}

func getStrings(o *unstructured.Unstructured, path string) []string {
	var out []string
	for _, v := range getSlice(o, path) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func getBool(o *unstructured.Unstructured, path string) (bool, bool) {
	b, ok := get(o, path).(bool)
	return b, ok
}

// getInt reads an integer the way it arrives: int64 from the API server,
// float64 or int from YAML files and tests.
func getInt(o *unstructured.Unstructured, path string) (int64, bool) {
	switch v := get(o, path).(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// secretData reads a Secret's key from data (base64) or stringData.
func secretData(s *unstructured.Unstructured, key string) (string, bool) {
	if v, ok := getMap(s, "stringData")[key].(string); ok {
		return v, true
	}
	if v, ok := getMap(s, "data")[key].(string); ok {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return "", false
}

func splitList(s string) []any {
	if s == "" {
		return nil
	}
	var out []any
	for _, p := range strings.Split(s, ",") {
		out = append(out, p)
	}
	return out
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
