package assisted

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ParseObjects reads YAML or JSON documents into objects.
func ParseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := d.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// ReadObjectFiles reads every object of the given YAML files.
func ReadObjectFiles(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := ParseObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

type scenarioObjects []*unstructured.Unstructured

func scenarioIndex(objs []*unstructured.Unstructured) scenarioObjects { return objs }

func (s scenarioObjects) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range s {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (s scenarioObjects) one(kind string) *unstructured.Unstructured {
	if all := s.all(kind); len(all) > 0 {
		return all[0]
	}
	return nil
}

func (s scenarioObjects) named(kind, name string) *unstructured.Unstructured {
	for _, o := range s.all(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// secretValue reads a Secret key from stringData or data, as the API server
// would hand it to the controller.
func (s scenarioObjects) secretValue(name, key string) (string, error) {
	sec := s.named("Secret", name)
	if sec == nil {
		return "", fmt.Errorf("no Secret %q", name)
	}
	if v, ok, _ := unstructured.NestedString(sec.Object, "stringData", key); ok {
		return v, nil
	}
	if v, ok, _ := unstructured.NestedString(sec.Object, "data", key); ok {
		b, err := base64.StdEncoding.DecodeString(v)
		return string(b), err
	}
	return "", fmt.Errorf("Secret %q has no key %s", name, key)
}

// mirrorConfiguration is the JSON the service keeps from a mirror registry
// ConfigMap (the raw registries.conf and CA bundle; the parsed mirror lists
// are left out, the re-created ConfigMap needs only the raw files).
func (s scenarioObjects) mirrorConfiguration(name string) (string, error) {
	cm := s.named("ConfigMap", name)
	if cm == nil {
		return "", fmt.Errorf("no ConfigMap %q", name)
	}
	reg, _, _ := unstructured.NestedString(cm.Object, "data", "registries.conf")
	ca, _, _ := unstructured.NestedString(cm.Object, "data", "ca-bundle.crt")
	b, err := json.Marshal(struct {
		RegistriesConf string `json:"registriesConf,omitempty"`
		CaBundleCrt    string `json:"caBundleCrt,omitempty"`
	}{reg, ca})
	return string(b), err
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	s, _ := v.(string)
	return s
}

func strs(o *unstructured.Unstructured, path ...string) []string {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func list(o *unstructured.Unstructured, path ...string) []map[string]any {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if mm, ok := e.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

func boolean(o *unstructured.Unstructured, path ...string) bool {
	b, _, _ := unstructured.NestedBool(o.Object, path...)
	return b
}

func integer(o *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return toInt64(v)
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func vips(single string, many []string) []string {
	if len(many) == 0 && single != "" {
		return []string{single}
	}
	return many
}

func dualStackCIDRs(cidrs []string) bool {
	var v4, v6 bool
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			v4 = v4 || p.Addr().Is4()
			v6 = v6 || p.Addr().Is6()
		}
	}
	return v4 && v6
}

// hyperthreadingOf is what the service stores for the ACI's machine pools:
// "all" when none is given, else the enabled pools in masters, arbiters,
// workers order, "none" when none is enabled.
func hyperthreadingOf(aci *unstructured.Unstructured) string {
	cp, hasCP, _ := unstructured.NestedMap(aci.Object, "spec", "controlPlane")
	arb, hasArb, _ := unstructured.NestedMap(aci.Object, "spec", "arbiter")
	var worker map[string]any
	for _, p := range list(aci, "spec", "compute") {
		if p["name"] == "worker" {
			worker = p
			break
		}
	}
	if !hasCP && !hasArb && worker == nil {
		return "all"
	}
	var on []string
	// The installer reads the manifest file itself: no CRD default applies,
	// and only an explicit Enabled counts (getHyperthreading).
	enabled := func(p map[string]any) bool { h, _ := p["hyperthreading"].(string); return h == "Enabled" }
	if hasCP && enabled(cp) {
		on = append(on, "masters")
	}
	if hasArb && enabled(arb) {
		on = append(on, "arbiters")
	}
	if worker != nil && enabled(worker) {
		on = append(on, "workers")
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}
