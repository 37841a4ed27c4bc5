package recreate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Against values of a Difference: what the re-created object is compared with.
const (
	// AgainstDatabase: the row, in the comparison a controller makes.
	AgainstDatabase = "database"
	// AgainstExported: node 0's CR as the bundle exported it.
	AgainstExported = OriginExported
	// AgainstManifests: node 0's install manifest.
	AgainstManifests = OriginManifests
)

// addedReported are the fields a re-created object may add to an install
// manifest that DiffNode0 still reports: the database cannot tell them, the
// restore chose them. Every other field a manifest leaves out is filled from
// the rows, which is what node 0's service held.
var addedReported = map[string]bool{
	"spec.holdInstallation": true,
}

// DiffNode0 compares every re-created object with the node-0 object it was
// re-created from (Result.Origins), field by field: metadata.namespace, each
// label and annotation, every leaf of spec (data for Secrets and ConfigMaps,
// redacted for Secrets). Against an exported CR every difference counts,
// additions included; against an install manifest, changed and removed values
// count, and of the added ones only addedReported (the rest come from the
// database, which holds what node 0 made of the manifest). Node 0's CRs that no
// row re-creates, and, when the bundle exported CRs, re-created CRs node 0 did
// not have, are reported as "(object)". The result is sorted.
func DiffNode0(res *Result) []Difference {
	var out []Difference
	exported := false
	for _, o := range res.Origins {
		if o.Source == OriginExported {
			exported = true
		}
	}
	for _, obj := range res.Objects {
		origin := res.Origins[keyOf(obj)]
		if origin == nil {
			if exported && crKinds[obj.GetKind()] {
				out = append(out, Difference{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
					Field: "(object)", Against: AgainstExported, Object: obj.GetName(),
					Note: "node 0 had no such CR: re-created from the database"})
			}
			continue
		}
		out = append(out, diffObjects(obj, origin)...)
	}
	for _, o := range res.Node0Missing {
		out = append(out, Difference{Kind: o.Object.GetKind(), Namespace: o.Object.GetNamespace(), Name: o.Object.GetName(),
			Field: "(object)", Against: o.Source, Node0: o.Object.GetName(),
			Note: "node 0 had this CR; no database row re-creates it (its controller would invent a row)"})
	}
	sortDifferences(out)
	return out
}

var crKinds = map[string]bool{kindCD: true, kindACI: true, kindInfraEnv: true, kindAgent: true, kindNMState: true, kindCIS: true}

func diffObjects(obj *unstructured.Unstructured, origin *Origin) []Difference {
	var out []Difference
	src := origin.Object
	secret := obj.GetKind() == kindSecret
	add := func(field string, now, before any, note string) {
		if secret && (strings.HasPrefix(field, "data.") || strings.HasPrefix(field, "stringData.")) {
			now, before = redactAny(now), redactAny(before)
		}
		out = append(out, Difference{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
			Field: field, Against: origin.Source, Object: now, Node0: before, Note: note})
	}
	if obj.GetNamespace() != src.GetNamespace() {
		add("metadata.namespace", obj.GetNamespace(), src.GetNamespace(), "moved by the namespace mapping")
	}
	now, before := map[string]any{}, map[string]any{}
	for _, part := range []string{"metadata.labels", "metadata.annotations", "spec", "data", "type"} {
		flattenInto(now, part, canon(get(obj, part)))
		flattenInto(before, part, canon(get(src, part)))
	}
	paths := map[string]bool{}
	for p := range now {
		paths[p] = true
	}
	for p := range before {
		paths[p] = true
	}
	for p := range paths {
		n, nok := now[p]
		b, bok := before[p]
		switch {
		case nok && bok && reflect.DeepEqual(n, b):
		case nok && !bok && origin.Source == OriginManifests && !addedReported[p]:
		case nok && !bok:
			add(p, n, nil, addedNote(p, origin.Source))
		case !nok:
			add(p, nil, b, "")
		default:
			add(p, n, b, "")
		}
	}
	return out
}

func addedNote(path, source string) string {
	if path == "spec.holdInstallation" && source == OriginManifests {
		return "held by the restore: node 0 ran without an API and started the installation itself; nothing on cluster 0 may start it"
	}
	return ""
}

func redactAny(v any) any {
	if v == nil {
		return nil
	}
	return Redacted
}

// flattenInto writes the leaves of v under prefix: maps are walked, lists and
// scalars are leaves. An empty map is no leaf.
func flattenInto(out map[string]any, prefix string, v any) {
	switch t := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range t {
			flattenInto(out, prefix+"."+k, e)
		}
	default:
		out[prefix] = t
	}
}

// canon gives a value the form JSON decoding gives it, integers as int64, so
// values built in Go and values read from YAML compare equal.
func canon(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return v
	}
	return normalizeNumbers(out)
}

func sortDifferences(out []Difference) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if restoreRank[a.Kind] != restoreRank[b.Kind] {
			return restoreRank[a.Kind] < restoreRank[b.Kind]
		}
		if a.objectName() != b.objectName() {
			return a.objectName() < b.objectName()
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Against < b.Against
	})
}
