package resources

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// ClusterSource exports the assisted CRs of some namespaces (all when
// Namespaces is empty), the Secrets and ConfigMaps they reference, the
// ClusterImageSets their AgentClusterInstalls name and their Namespace objects.
// Kinds whose CRD is not installed are skipped.
//
// With LocalAuth it also exports the service's local-auth Secret
// (assisted-servicelocal-auth: the key pair node 0's service signs and checks
// its tokens with), so that cluster 0's service accepts node 0's tokens. Set
// it only for an encrypted layer: the Secret holds a private key.
type ClusterSource struct {
	Client     dynamic.Interface
	Namespaces []string
	// LocalAuth includes the local-auth Secret: from LocalAuthNamespace, or
	// the only one found in any namespace (none found, or no right to list
	// Secrets everywhere: not included).
	LocalAuth          bool
	LocalAuthNamespace string
}

// LocalAuthSecretName is the operator's local-auth Secret
// (agentserviceconfig_controller.go newAgentLocalAuthSecret).
const LocalAuthSecretName = "assisted-servicelocal-auth"

// localAuthSecret finds the local-auth Secret to export, or nil.
func (s *ClusterSource) localAuthSecret(ctx context.Context) (*unstructured.Unstructured, error) {
	if s.LocalAuthNamespace != "" {
		o, err := s.Client.Resource(gvrSecret).Namespace(s.LocalAuthNamespace).Get(ctx, LocalAuthSecretName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get secret %s/%s: %w", s.LocalAuthNamespace, LocalAuthSecretName, err)
		}
		return o, nil
	}
	list, err := s.Client.Resource(gvrSecret).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + LocalAuthSecretName})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list secrets %s: %w", LocalAuthSecretName, err)
	}
	var found []*unstructured.Unstructured
	for i := range list.Items {
		if list.Items[i].GetName() == LocalAuthSecretName { // not every server filters by field
			found = append(found, &list.Items[i])
		}
	}
	// One in the exported namespaces is node 0's service's, whatever other
	// services the cluster runs.
	var inExported []*unstructured.Unstructured
	for _, o := range found {
		if slices.Contains(s.Namespaces, o.GetNamespace()) {
			inExported = append(inExported, o)
		}
	}
	if len(inExported) == 1 {
		return inExported[0], nil
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d secrets %s (one per assisted-service): name the service's namespace with --local-auth-namespace", len(found), LocalAuthSecretName)
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
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
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
	for _, name := range slices.Sorted(maps.Keys(imageSets)) {
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
	if s.LocalAuth {
		o, err := s.localAuthSecret(ctx)
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
	out = append(out, crs...)
	for _, o := range out {
		unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
	}
	return out, nil
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
