package fakehost

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The own subset catches the same violations as the real spec: a status out
// of the enum, an undeclared property, a missing required one, a bad uuid.
func TestOwnSwaggerSubset_Validates(t *testing.T) {
	s, err := ReadSwagger(OwnSwaggerPath())
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{"kind": "AddToExistingClusterHost", "id": "0b8f3f4c-5e2a-4f1b-9c55-4d1e2a3b4c5d", "href": "/h",
		"status": "known", "status_info": "ready", "role": "worker", "progress": map[string]any{"current_stage": "Rebooting", "installation_percentage": 80.0}}
	if errs := s.Validate("host", good); len(errs) > 0 {
		t.Fatalf("valid host rejected: %v", errs)
	}
	bad := map[string]any{"kind": "Host", "id": "not-a-uuid", "status": "rebooting-now", "status_info": "", "made_up": true}
	errs := strings.Join(s.Validate("host", bad), "\n")
	for _, want := range []string{`rebooting-now is not one of`, `property "made_up" is not in the spec`, `required property "href" missing`, `"not-a-uuid" is not a uuid`} {
		if !strings.Contains(errs, want) {
			t.Errorf("validator missed %q; got:\n%s", want, errs)
		}
	}
}

// Every fact of the own subset (types, formats, enums, $refs, required lists)
// is the real spec's, whenever ../shared has the real spec.
func TestOwnSwaggerSubset_MatchesReal(t *testing.T) {
	own, err := ReadSwagger(OwnSwaggerPath())
	if err != nil {
		t.Fatal(err)
	}
	p := RealSwaggerPath()
	if p == "" {
		t.Log("real swagger absent: nothing to compare with (TestOwnSwaggerSubset_Validates checks the subset)")
		return
	}
	real, err := ReadSwagger(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, d := range own.definitions {
		rd, ok := real.definitions[name].(map[string]any)
		if !ok {
			t.Errorf("definition %s is not in the real spec", name)
			continue
		}
		n += compareSwagger(t, name, d.(map[string]any), rd)
	}
	if n < 40 {
		t.Fatalf("only %d facts compared", n)
	}
}

func compareSwagger(t *testing.T, path string, own, real map[string]any) int {
	t.Helper()
	n := 0
	for _, k := range []string{"type", "format", "$ref"} {
		if v, ok := own[k]; ok {
			n++
			if v != real[k] {
				t.Errorf("%s: %s %v, real %v", path, k, v, real[k])
			}
		}
	}
	for _, k := range []string{"enum", "required"} {
		if v, ok := own[k]; ok || real[k] != nil && k == "required" && own["properties"] != nil {
			n++
			if !sameSet(v, real[k]) {
				t.Errorf("%s: %s %v, real %v", path, k, v, real[k])
			}
		}
	}
	props, _ := own["properties"].(map[string]any)
	rprops, _ := real["properties"].(map[string]any)
	for k, v := range props {
		rv, ok := rprops[k].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: not in the real spec", path, k)
			continue
		}
		n += compareSwagger(t, path+"."+k, v.(map[string]any), rv)
	}
	if items, ok := own["items"].(map[string]any); ok {
		ri, _ := real["items"].(map[string]any)
		n += compareSwagger(t, path+"[]", items, ri)
	}
	return n
}

func sameSet(a, b any) bool {
	norm := func(v any) []string {
		s, _ := v.([]any)
		out := []string{}
		for _, x := range s {
			out = append(out, fmt.Sprint(x))
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
