package resources

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Client is what Apply needs of the target cluster.
type Client struct {
	Dynamic dynamic.Interface
	// Discovery, when set, is asked first whether every API the plan needs is
	// served, which also proves the cluster is reachable.
	Discovery discovery.DiscoveryInterface
}

// existence classifies an object found on the target before any change.
type existence int

const (
	absent     existence = iota
	ours                 // carries this bundle's digest: an earlier run created it
	namespace            // a Namespace that already exists: never a conflict
	equivalent           // exists and already holds everything the bundle sets
	conflicting
)

func (e existence) String() string {
	return [...]string{"absent", "restored by an earlier run of this bundle", "namespace exists", "exists and matches the bundle", "exists and differs from the bundle"}[e]
}

type found struct {
	class    existence
	existing *unstructured.Unstructured
}

func gvrOf(obj *unstructured.Unstructured) (schema.GroupVersionResource, Step) {
	gvk := obj.GroupVersionKind()
	step, _ := stepFor(gvk.GroupKind())
	return gvk.GroupVersion().WithResource(step.Resource), step
}

func resourceFor(c Client, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	gvr, step := gvrOf(obj)
	if step.Namespaced {
		return c.Dynamic.Resource(gvr).Namespace(obj.GetNamespace())
	}
	return c.Dynamic.Resource(gvr)
}

// checkAPIs asks discovery for every group/version/resource of the plan.
func checkAPIs(c Client, p *Plan) error {
	if c.Discovery == nil {
		return nil
	}
	need := map[string]map[string]bool{}
	for _, it := range p.Items {
		if it.Skip != "" {
			continue
		}
		gvr, _ := gvrOf(it.Object)
		gv := gvr.GroupVersion().String()
		if need[gv] == nil {
			need[gv] = map[string]bool{}
		}
		need[gv][gvr.Resource] = true
	}
	gvs := make([]string, 0, len(need))
	for gv := range need {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	var missing []string
	for _, gv := range gvs {
		list, err := c.Discovery.ServerResourcesForGroupVersion(gv)
		if err != nil && !apierrors.IsNotFound(err) {
			if isUnreachable(err) {
				return &UnreachableError{Err: err}
			}
			return fmt.Errorf("discover %s: %w", gv, err)
		}
		served := map[string]bool{}
		if list != nil {
			for _, r := range list.APIResources {
				served[r.Name] = true
			}
		}
		for res := range need[gv] {
			if !served[res] {
				missing = append(missing, res+"."+gv)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &MissingAPIError{Resources: missing}
	}
	return nil
}

// preflight reads every object of the plan from the target and classifies it.
// It changes nothing.
func preflight(ctx context.Context, c Client, p *Plan) ([]found, error) {
	if err := checkAPIs(c, p); err != nil {
		return nil, err
	}
	out := make([]found, len(p.Items))
	for i, it := range p.Items {
		if it.Skip != "" {
			continue
		}
		cur, err := resourceFor(c, it.Object).Get(ctx, it.Object.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out[i] = found{class: absent}
			continue
		case err != nil && isUnreachable(err):
			return nil, &UnreachableError{Err: err}
		case err != nil:
			return nil, fmt.Errorf("read %s from the target: %w", it.Key(), err)
		}
		out[i] = found{existing: cur, class: classify(it.Object, cur, p.opts.BundleDigest)}
	}
	return out, nil
}

func classify(desired, cur *unstructured.Unstructured, digest string) existence {
	switch {
	case digest != "" && cur.GetAnnotations()[AnnotationBundleDigest] == digest:
		return ours
	case kindIs(desired, "", "Namespace"):
		return namespace
	case equivalentTo(desired, cur):
		return equivalent
	}
	return conflicting
}

// equivalentTo reports whether cur already holds every non-metadata field of
// desired (spec, data, type, ...) with the same value; fields the server
// defaulted are ignored.
func equivalentTo(desired, cur *unstructured.Unstructured) bool {
	for k, v := range desired.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		if !contains(cur.Object[k], v) {
			return false
		}
	}
	return true
}

func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !contains(h[k], wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(number(have), number(want))
}

// number makes JSON numbers of any Go type comparable.
func number(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case float32:
		return float64(n)
	}
	return v
}
