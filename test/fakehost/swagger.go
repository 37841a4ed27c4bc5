package fakehost

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Swagger is the assisted-service REST API spec (swagger 2.0), for checking
// the fake's responses: the real spec of
// ../shared/fixtures/assisted-service-swagger.yaml when present, else the
// project's own minimal schema of what the fake serves
// (assisted-swagger-subset.yaml beside this file).
type Swagger struct {
	// Source is the file the definitions came from.
	Source      string
	definitions map[string]any
}

// RealSwaggerPath is the real spec in ../shared, or "" when absent.
func RealSwaggerPath() string {
	p := filepath.Join(harness.SharedDir(), "fixtures", "assisted-service-swagger.yaml")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// OwnSwaggerPath is the project's own minimal schema of what the fake serves.
func OwnSwaggerPath() string {
	return filepath.Join(harness.RepoRoot(), "test", "fakehost", "assisted-swagger-subset.yaml")
}

// ReadSwagger reads the definitions of a swagger file.
func ReadSwagger(path string) (*Swagger, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("assisted-service swagger %s: %w", path, err)
	}
	defs, _ := doc["definitions"].(map[string]any)
	if len(defs) == 0 {
		return nil, fmt.Errorf("assisted-service swagger %s has no definitions", path)
	}
	return &Swagger{Source: path, definitions: defs}, nil
}

var (
	swaggerOnce sync.Once
	swagger     *Swagger
	swaggerErr  error
)

// LoadSwagger reads the spec once per test process: the real one when
// present, else the own subset.
func LoadSwagger() (*Swagger, error) {
	swaggerOnce.Do(func() {
		p := RealSwaggerPath()
		if p == "" {
			p = OwnSwaggerPath()
		}
		swagger, swaggerErr = ReadSwagger(p)
	})
	return swagger, swaggerErr
}

// Validate checks a decoded JSON value against a definition: types, required
// properties, enums, uuid and date-time formats, and no property the
// definition does not declare. It returns every violation.
func (s *Swagger) Validate(definition string, v any) []string {
	def, ok := s.definitions[definition].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("no definition %q in the spec", definition)}
	}
	var errs []string
	s.check(def, v, definition, &errs)
	return errs
}

var (
	refRE  = regexp.MustCompile(`^#/definitions/(.+)$`)
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

func (s *Swagger) check(schema map[string]any, v any, path string, errs *[]string) {
	fail := func(format string, a ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, a...)) }
	if ref, ok := schema["$ref"].(string); ok {
		m := refRE.FindStringSubmatch(ref)
		def, found := map[string]any(nil), false
		if m != nil {
			def, found = s.definitions[m[1]].(map[string]any)
		}
		if !found {
			fail("unresolvable $ref %q", ref)
			return
		}
		s.check(def, v, path, errs)
		return
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if e == v {
				found = true
			}
		}
		if !found {
			fail("%v is not one of %v", v, enum)
		}
	}
	switch t, _ := schema["type"].(string); t {
	case "object", "":
		obj, ok := v.(map[string]any)
		if !ok {
			if t == "object" {
				fail("want an object, got %T", v)
			}
			return
		}
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				fail("required property %q missing", r)
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				fail("property %q is not in the spec", k)
				continue
			}
			s.check(ps, obj[k], path+"."+k, errs)
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			fail("want an array, got %T", v)
			return
		}
		items, _ := schema["items"].(map[string]any)
		for i, it := range arr {
			s.check(items, it, fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			fail("want a string, got %T", v)
			return
		}
		switch schema["format"] {
		case "uuid":
			if !uuidRE.MatchString(str) {
				fail("%q is not a uuid", str)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339, str); err != nil {
				fail("%q is not a date-time", str)
			}
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			fail("want an integer, got %v", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want a boolean, got %T", v)
		}
	}
}
