package harness

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// crdsByName reads every CustomResourceDefinition of files, by metadata.name.
func crdsByName(t *testing.T, files []string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		objs, err := ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				out[o.GetName()] = o
			}
		}
	}
	return out
}

// The kinds the repository must define itself when ../shared is absent.
var ownKinds = []string{
	"agentclassifications.agent-install.openshift.io",
	"agents.agent-install.openshift.io",
	"agentserviceconfigs.agent-install.openshift.io",
	"infraenvs.agent-install.openshift.io",
	"nmstateconfigs.agent-install.openshift.io",
	"agentclusterinstalls.extensions.hive.openshift.io",
	"baremetalhosts.metal3.io",
	"preprovisioningimages.metal3.io",
}

func ownCRDs(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	own, _ := filepath.Glob(filepath.Join(RepoRoot(), "test", "harness", "crds", "*.yaml"))
	return crdsByName(t, own)
}

// Every kind the project moves has a definition of its own, and each one is
// self-consistent: its name is <plural>.<group>, one served storage version,
// a status subresource, and spec/status keep unknown fields.
func TestOwnCRDs_CoverEveryKindAndAreConsistent(t *testing.T) {
	own := ownCRDs(t)
	var names []string
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names)
	want := append([]string(nil), ownKinds...)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("own CRDs = %v, want %v", names, want)
	}
	for n, c := range own {
		group, _, _ := unstructured.NestedString(c.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(c.Object, "spec", "names", "plural")
		if n != plural+"."+group {
			t.Errorf("%s: name is not plural.group (%s.%s)", n, plural, group)
		}
		versions, _, _ := unstructured.NestedSlice(c.Object, "spec", "versions")
		if len(versions) != 1 {
			t.Errorf("%s: %d versions, want 1", n, len(versions))
			continue
		}
		v := versions[0].(map[string]any)
		if v["served"] != true || v["storage"] != true {
			t.Errorf("%s: version not served+storage", n)
		}
		if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
			t.Errorf("%s: no status subresource", n)
		}
		for _, part := range []string{"spec", "status"} {
			p, ok, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", part)
			if !ok {
				continue
			}
			if p["x-kubernetes-preserve-unknown-fields"] != true {
				t.Errorf("%s: %s prunes unknown fields", n, part)
			}
		}
	}
}

// The own definitions state the same facts as the real upstream CRDs: names,
// scope, version, subresources, and for every property they type, the same
// type, required list and enum. Compared whenever ../shared/crds is present.
func TestOwnCRDs_MatchRealOnes(t *testing.T) {
	shared, _ := SharedCRDFiles()
	if len(shared) == 0 {
		t.Log("../shared/crds absent: nothing to compare with (the own CRDs are checked by TestOwnCRDs_CoverEveryKindAndAreConsistent)")
		return
	}
	real := crdsByName(t, shared)
	for name, o := range ownCRDs(t) {
		r, ok := real[name]
		if !ok {
			t.Errorf("%s: no real CRD of that name in ../shared/crds", name)
			continue
		}
		for _, path := range [][]string{{"spec", "group"}, {"spec", "scope"}, {"spec", "names", "kind"},
			{"spec", "names", "listKind"}, {"spec", "names", "plural"}, {"spec", "names", "singular"}, {"spec", "names", "shortNames"}} {
			a, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
			b, _, _ := unstructured.NestedFieldNoCopy(r.Object, path...)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s: %s = %v, real %v", name, strings.Join(path, "."), a, b)
			}
		}
		ov, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		rv, _, _ := unstructured.NestedSlice(r.Object, "spec", "versions")
		if len(rv) != 1 || len(ov) != 1 {
			t.Errorf("%s: versions own %d real %d", name, len(ov), len(rv))
			continue
		}
		om, rm := ov[0].(map[string]any), rv[0].(map[string]any)
		for _, k := range []string{"name", "served", "storage", "subresources"} {
			if !reflect.DeepEqual(om[k], rm[k]) {
				t.Errorf("%s: version %s = %v, real %v", name, k, om[k], rm[k])
			}
		}
		os, _, _ := unstructured.NestedMap(om, "schema", "openAPIV3Schema")
		rs, _, _ := unstructured.NestedMap(rm, "schema", "openAPIV3Schema")
		compareSchema(t, name, "", os, rs)
	}
}

// compareSchema checks every node of own against the same node of real.
func compareSchema(t *testing.T, crd, path string, own, real map[string]any) {
	t.Helper()
	if real == nil {
		t.Errorf("%s: %s is not in the real schema", crd, path)
		return
	}
	if typ, ok := own["type"]; ok && typ != real["type"] {
		t.Errorf("%s: %s type %v, real %v", crd, path, typ, real["type"])
	}
	if path != "" && path != ".metadata" { // the real ones omit metadata's fields too
		if !sameStrings(own["required"], real["required"]) {
			t.Errorf("%s: %s required %v, real %v", crd, path, own["required"], real["required"])
		}
	}
	if e, ok := own["enum"]; ok && !sameStrings(e, real["enum"]) {
		t.Errorf("%s: %s enum %v, real %v", crd, path, e, real["enum"])
	}
	if f, ok := own["format"]; ok && f != real["format"] {
		t.Errorf("%s: %s format %v, real %v", crd, path, f, real["format"])
	}
	props, _ := own["properties"].(map[string]any)
	rprops, _ := real["properties"].(map[string]any)
	for k, v := range props {
		rv, _ := rprops[k].(map[string]any)
		if rv == nil && real["x-kubernetes-preserve-unknown-fields"] == true {
			continue // the real schema keeps it as unknown too
		}
		compareSchema(t, crd, path+"."+k, v.(map[string]any), rv)
	}
	if items, ok := own["items"].(map[string]any); ok {
		ri, _ := real["items"].(map[string]any)
		compareSchema(t, crd, path+"[]", items, ri)
	}
	if ap, ok := own["additionalProperties"].(map[string]any); ok {
		rap, _ := real["additionalProperties"].(map[string]any)
		compareSchema(t, crd, path+"{}", ap, rap)
	}
}

func sameStrings(a, b any) bool {
	norm := func(v any) []string {
		s, _ := v.([]any)
		out := make([]string, 0, len(s))
		for _, x := range s {
			out = append(out, fmt.Sprint(x))
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// The Hive CRDs make tools generates are the same kinds as the real ones.
func TestGeneratedHiveCRDs_MatchRealOnes(t *testing.T) {
	hive, _ := filepath.Glob(filepath.Join(CacheDir(), "crds", "hive", "*.yaml"))
	if len(hive) == 0 {
		Unavailable(t, "generated Hive CRDs", fmt.Errorf("none in %s", filepath.Join(CacheDir(), "crds", "hive")))
	}
	gen := crdsByName(t, hive)
	for _, n := range []string{"clusterdeployments.hive.openshift.io", "clusterimagesets.hive.openshift.io"} {
		if gen[n] == nil {
			t.Fatalf("make tools generated no %s", n)
		}
	}
	shared, _ := SharedCRDFiles()
	if len(shared) == 0 {
		return
	}
	real := crdsByName(t, shared)
	for n, g := range gen {
		r := real[n]
		if r == nil {
			t.Errorf("%s: not in ../shared/crds", n)
			continue
		}
		for _, path := range [][]string{{"spec", "group"}, {"spec", "scope"}, {"spec", "names"}} {
			a, _, _ := unstructured.NestedFieldNoCopy(g.Object, path...)
			b, _, _ := unstructured.NestedFieldNoCopy(r.Object, path...)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s: %s = %v, real %v", n, strings.Join(path, "."), a, b)
			}
		}
		// The fields the project reads must be in both.
		for _, p := range [][]string{{"spec", "baseDomain"}, {"spec", "clusterName"}, {"spec", "clusterMetadata"}, {"spec", "releaseImage"}} {
			gs := propertyAt(g, p)
			rs := propertyAt(r, p)
			if (gs == nil) != (rs == nil) {
				t.Errorf("%s: %s generated %v, real %v", n, strings.Join(p, "."), gs != nil, rs != nil)
			}
		}
	}
}

func propertyAt(crd *unstructured.Unstructured, path []string) map[string]any {
	v, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(v) == 0 {
		return nil
	}
	node, _, _ := unstructured.NestedMap(v[0].(map[string]any), "schema", "openAPIV3Schema")
	for _, p := range path {
		props, _ := node["properties"].(map[string]any)
		node, _ = props[p].(map[string]any)
		if node == nil {
			return nil
		}
	}
	return node
}

// namespacePaths lists every spec property named "namespace" reachable through
// object properties (not array items), as kind -> dotted paths.
func namespacePaths(crd *unstructured.Unstructured) (string, string, []string) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	spec := propertyAt(crd, []string{"spec"})
	var out []string
	var walk func(node map[string]any, path []string)
	walk = func(node map[string]any, path []string) {
		props, _ := node["properties"].(map[string]any)
		for k, v := range props {
			p := append(append([]string(nil), path...), k)
			if k == "namespace" {
				out = append(out, strings.Join(p, "."))
			}
			if m, ok := v.(map[string]any); ok {
				walk(m, p)
			}
		}
	}
	if spec != nil {
		walk(spec, []string{"spec"})
	}
	sort.Strings(out)
	return group, kind, out
}

// restore/resources.NamespaceRefs names the namespace fields a namespace
// mapping rewrites. It must hold every spec "namespace" property of the CRDs the
// suite installs: all of the real ones when ../shared/crds is present, and
// the ones the project's own definitions type otherwise (the list in
// restore/resources is hard-coded; this keeps it true).
func TestNamespaceRefs_CoverTheCRDs(t *testing.T) {
	files, err := SharedCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(RepoRoot(), "test", "harness", "crds", "*.yaml"))
	}
	have := map[string]bool{}
	for _, r := range resources.NamespaceRefs {
		have[r.Group+"/"+r.Kind+":"+strings.Join(r.Path, ".")] = true
	}
	n := 0
	for name, crd := range crdsByName(t, files) {
		if name == "agentserviceconfigs.agent-install.openshift.io" {
			continue // not moved: cluster 0's hub has its own AgentServiceConfig
		}
		g, k, paths := namespacePaths(crd)
		for _, p := range paths {
			n++
			if !have[g+"/"+k+":"+p] {
				t.Errorf("%s %s has %s, which resources.NamespaceRefs lacks", g, k, p)
			}
		}
	}
	if n < 8 {
		t.Fatalf("found only %d namespace fields in the CRDs", n)
	}
}
