package resources

import (
	"context"
	"fmt"
	"io"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// ClusterSource exports the assisted CRs of some namespaces (all when
// Namespaces is empty), the Secrets and ConfigMaps they reference, the
// ClusterImageSets their AgentClusterInstalls name and their Namespace objects.
// Kinds whose CRD is not installed are skipped.
type ClusterSource struct {
	Client     dynamic.Interface
	Namespaces []string
}

// Write exports the objects into w as the layer's tar.
func (s *ClusterSource) Write(ctx context.Context, w io.Writer) (*Summary, error) {
	objs, err := s.Collect(ctx)
	if err != nil {
		return nil, err
	}
	return writeObjects(w, objs)
}

// Collect returns the objects Write would store, in restore order.
func (s *ClusterSource) Collect(ctx context.Context) ([]*unstructured.Unstructured, error) {
	var crs []*unstructured.Unstructured
	namespaces := map[string]bool{}
	for _, ns := range s.Namespaces {
		namespaces[ns] = true
	}
	scopes := s.Namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	for _, gvr := range namespacedKinds {
		for _, ns := range scopes {
			list, err := s.Client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue // CRD not installed
			}
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
			}
			for i := range list.Items {
				o := &list.Items[i]
				crs = append(crs, o)
				namespaces[o.GetNamespace()] = true
			}
		}
	}

	var out []*unstructured.Unstructured
	for _, ns := range sortedKeys(namespaces) {
		o, err := s.Client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get namespace %s: %w", ns, err)
		}
		out = append(out, o)
	}
	imageSets := map[string]bool{}
	refs := map[objectRef]bool{}
	for _, o := range crs {
		for _, r := range references(o) {
			refs[r] = true
		}
		if o.GetKind() == "AgentClusterInstall" {
			if name, _, _ := unstructured.NestedString(o.Object, "spec", "imageSetRef", "name"); name != "" {
				imageSets[name] = true
			}
		}
	}
	for _, name := range sortedKeys(imageSets) {
		o, err := s.Client.Resource(gvrClusterImageSet).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // referenced but absent: the restore reports it
		}
		if err != nil {
			return nil, fmt.Errorf("get clusterimageset %s: %w", name, err)
		}
		out = append(out, o)
	}
	for _, r := range sortedRefs(refs) {
		gvr := gvrSecret
		if r.configMap {
			gvr = gvrConfigMap
		}
		o, err := s.Client.Resource(gvr).Namespace(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			// The error names the object, never its data.
			return nil, fmt.Errorf("get %s %s/%s: %w", gvr.Resource, r.namespace, r.name, err)
		}
		out = append(out, o)
	}
	out = append(out, crs...)
	for _, o := range out {
		unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

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

// entryName is where an object is stored in the tar:
// cluster/<namespace|_cluster>/<kind>.<group>/<name>.json. The kind (not the
// resource) keeps it readable without discovery.
func entryName(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" {
		ns = clusterScoped
	}
	gvk := o.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	return clusterPrefix + ns + "/" + kind + "/" + o.GetName() + ".json"
}
