package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// lossy are the spec fields of a CR that assisted-service does not store, so
// they cannot come back from the rows: field prefix -> why.
var lossy = map[string]string{
	"AgentClusterInstall spec.provisionRequirements.workerAgents":  "not stored; re-created as the number of worker hosts",
	"ClusterDeployment spec.controlPlaneConfig":                    "hive serving-certificate settings; assisted-service stores nothing of them",
	"ClusterDeployment spec.platform.agentBareMetal.agentSelector": "not stored; re-created as the InfraEnv label every re-created Agent carries",
	"InfraEnv spec.nmStateConfigLabelSelector":                     "not stored; re-created with the InfraEnv label (NMStateConfig contents are compared instead)",
}

// added are spec fields the re-created CR has that the original left out:
// the value the service chose or derived, written out so the controller
// compares it instead of choosing again.
var added = map[string]string{
	"ClusterDeployment spec.platform.agentBareMetal.agentSelector": "see lossy",
	"ClusterDeployment spec.preserveOnDelete":                      "cluster 0's own ClusterDeployment must never deprovision it",
	"AgentClusterInstall spec.holdInstallation":                    "a day-1 cluster that is not installed is held: nothing on cluster 0 may start its installation (recreate.setHold)",
	"AgentClusterInstall spec.networking.userManagedNetworking":    "the stored effective value (SNO implies it)",
	"AgentClusterInstall spec.platformType":                        "the platform the service picked",
	"AgentClusterInstall spec.provisionRequirements.workerAgents":  "not stored; derived from the hosts with the worker role",
	"AgentClusterInstall spec.networking.networkType":              "the network type the service picked",
	"InfraEnv spec.imageType":                                      "the image type the service used",
	"InfraEnv spec.cpuArchitecture":                                "the architecture the service used",
	"InfraEnv spec.nmStateConfigLabelSelector":                     "see lossy",
	"Agent spec.installation_disk_id":                              "the disk the service chose for the host",
}

// TestRecreate_RoundTripFixtures takes the example CRs as the truth, stores
// them as assisted-service would (real rows, real schema), re-creates the CRs
// from the rows and compares the spec fields.
func TestRecreate_RoundTripFixtures(t *testing.T) {
	dir := harness.ExampleCRsDir()
	acis, err := filepath.Glob(filepath.Join(dir, "agentClusterInstall*.yaml"))
	if err != nil || len(acis) == 0 {
		t.Fatalf("no AgentClusterInstall fixtures in %s: %v", dir, err)
	}
	cases := map[string][]string{}
	for _, aci := range acis {
		cases[filepath.Base(aci)] = []string{aci, "infraEnv.yaml"}
	}
	cases["late-binding infraEnv"] = []string{filepath.Join(dir, "agentClusterInstall.yaml"), "infraEnvLateBinding.yaml"}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		files := cases[name]
		t.Run(name, func(t *testing.T) {
			objs, err := assisted.ReadObjectFiles(files[0], filepath.Join(dir, files[1]),
				filepath.Join(dir, "clusterDeployment.yaml"), filepath.Join(dir, "clusterImageSet.yaml"),
				filepath.Join(dir, "pullsecret.yaml"), filepath.Join(dir, "nmstate.yaml"), filepath.Join(dir, "agent.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			// The fixtures' ClusterImageSet is named unlike the ACIs' reference.
			for _, o := range objs {
				if o.GetKind() == "AgentClusterInstall" {
					ref, _, _ := unstructured.NestedString(o.Object, "spec", "imageSetRef", "name")
					for _, c := range objs {
						if c.GetKind() == "ClusterImageSet" {
							c.SetName(ref)
						}
					}
				}
			}
			s := assisted.Scenario{Name: "fixture-" + name, Objects: objs, OpenshiftVersion: "5.0.0-ec.5"}
			conn := scenarioDB(t, s)
			res, err := recreate.Build(context.Background(), conn, recreate.Options{Namespace: "spoke-cluster"})
			if err != nil {
				t.Fatal(err)
			}
			if diffs, err := recreate.Diff(res.Objects, res.Rows); err != nil || len(diffs) > 0 {
				t.Fatalf("drift on the re-created objects: %v %v", err, diffs)
			}
			for _, kind := range []string{"ClusterDeployment", "AgentClusterInstall", "InfraEnv", "Agent"} {
				orig, got := one(objs, kind), one(res.Objects, kind)
				if orig == nil || got == nil {
					t.Fatalf("%s: original %v, re-created %v", kind, orig != nil, got != nil)
				}
				compareSpecs(t, kind, flatten(normalize(orig, objs)), flatten(normalize(got, res.Objects)))
			}
		})
	}
}

func compareSpecs(t *testing.T, kind string, orig, got map[string]any) {
	t.Helper()
	matchesPrefix := func(table map[string]string, path string) bool {
		for p := range table {
			if strings.HasPrefix(kind+" "+path, p) {
				return true
			}
		}
		return false
	}
	for path, v := range orig {
		if matchesPrefix(lossy, path) {
			continue
		}
		if g, ok := got[path]; !ok || !reflect.DeepEqual(g, v) {
			t.Errorf("%s %s: original %v, re-created %v", kind, path, v, g)
		}
	}
	for path, g := range got {
		if _, ok := orig[path]; !ok && !matchesPrefix(added, path) {
			t.Errorf("%s %s: re-created %v, absent in the original", kind, path, g)
		}
	}
}

func one(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// normalize resolves references to what they hold (names are chosen anew on
// restore) and applies the service's own normalizations, so two specs that
// the controller would treat alike compare equal.
func normalize(o *unstructured.Unstructured, all []*unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	secret := func(name, key string) string {
		for _, s := range all {
			if s.GetKind() == "Secret" && s.GetName() == name {
				v, ok, _ := unstructured.NestedString(s.Object, "stringData", key)
				if !ok {
					enc, _, _ := unstructured.NestedString(s.Object, "data", key)
					b, _ := base64Decode(enc)
					v = b
				}
				return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(v)))
			}
		}
		return "missing Secret " + name
	}
	// A mirror registry ConfigMap is compared by what it holds.
	if ref, ok := spec["mirrorRegistryRef"].(map[string]any); ok {
		for _, c := range all {
			if c.GetKind() == "ConfigMap" && c.GetName() == ref["name"] {
				reg, _, _ := unstructured.NestedString(c.Object, "data", "registries.conf")
				ca, _, _ := unstructured.NestedString(c.Object, "data", "ca-bundle.crt")
				spec["mirrorRegistryRef"] = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(reg+"\x00"+ca)))
			}
		}
	}
	switch o.GetKind() {
	case "ClusterDeployment":
		delete(spec, "clusterInstallRef")
		if ref, ok := spec["pullSecretRef"].(map[string]any); ok {
			spec["pullSecretRef"] = secret(fmt.Sprint(ref["name"]), ".dockerconfigjson")
		}
	case "AgentClusterInstall":
		delete(spec, "clusterDeploymentRef")
		if ref, ok := spec["imageSetRef"].(map[string]any); ok {
			for _, c := range all {
				if c.GetKind() == "ClusterImageSet" && c.GetName() == ref["name"] {
					spec["imageSetRef"], _, _ = unstructured.NestedString(c.Object, "spec", "releaseImage")
				}
			}
		}
		for _, v := range []string{"apiVIP", "ingressVIP"} {
			if single, ok := spec[v].(string); ok {
				if _, has := spec[v+"s"]; !has {
					spec[v+"s"] = []any{single}
				}
				delete(spec, v)
			}
		}
		if ref, ok, _ := unstructured.NestedMap(spec, "ignitionEndpoint", "caCertificateReference"); ok {
			_ = unstructured.SetNestedField(spec, secret(fmt.Sprint(ref["name"]), "tls.crt"), "ignitionEndpoint", "caCertificateReference")
		}
		if v, ok := o.GetAnnotations()["agent-install.openshift.io/install-config-overrides"]; ok {
			spec["(annotation install-config-overrides)"] = v
		}
	case "InfraEnv":
		if _, ok := spec["clusterRef"]; ok {
			spec["clusterRef"] = "bound"
		}
		if ref, ok := spec["pullSecretRef"].(map[string]any); ok {
			spec["pullSecretRef"] = secret(fmt.Sprint(ref["name"]), ".dockerconfigjson")
		}
		if tb, ok := spec["additionalTrustBundle"].(string); ok {
			spec["additionalTrustBundle"] = strings.TrimSpace(tb) // the service trims it
		}
		sel, _, _ := unstructured.NestedStringMap(spec, "nmStateConfigLabelSelector", "matchLabels")
		var configs []string
		for _, n := range all {
			if n.GetKind() != "NMStateConfig" || len(sel) == 0 || !labelsMatch(sel, n.GetLabels()) {
				continue
			}
			b, _ := json.Marshal(map[string]any{"config": n.Object["spec"].(map[string]any)["config"], "interfaces": n.Object["spec"].(map[string]any)["interfaces"]})
			configs = append(configs, string(b))
		}
		sort.Strings(configs)
		for i, c := range configs {
			spec[fmt.Sprintf("(NMStateConfig %d)", i)] = c
		}
	case "Agent":
		if _, ok := spec["clusterDeploymentName"]; ok {
			spec["clusterDeploymentName"] = "bound"
		}
	}
	return spec
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// flatten turns nested maps and lists into path -> leaf, numbers as int64.
func flatten(v map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out[prefix] = "{}"
			}
			for k, e := range t {
				walk(prefix+"."+k, e)
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		case float64:
			out[prefix] = int64(t)
		case int:
			out[prefix] = int64(t)
		default:
			out[prefix] = t
		}
	}
	walk("spec", v)
	return out
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}
