package nodesconfig

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// unknownFields names every field of raw YAML that Config does not have, with
// its path ("hosts[0].rootDeviceHints.serial") and the fields allowed there, so
// a misspelt key is reported precisely rather than as a bare field name.
func unknownFields(b []byte) []string {
	var raw any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil
	}
	var out []string
	walkUnknown(raw, reflect.TypeOf(Config{}), "", &out)
	return out
}

func walkUnknown(v any, t reflect.Type, at string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f
			names = append(names, name)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			path := k
			if at != "" {
				path = at + "." + k
			}
			if !ok {
				what := "fields"
				if t == reflect.TypeOf(RootDeviceHints{}) {
					what = "root device hints"
				}
				*out = append(*out, fmt.Sprintf("unknown field %q: valid %s are %s", path, what, strings.Join(names, ", ")))
				continue
			}
			walkUnknown(m[k], f.Type, path, out)
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			walkUnknown(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i), out)
		}
	}
}
