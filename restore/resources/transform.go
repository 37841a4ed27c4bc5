package resources

import (
	"encoding/base64"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Transform is one rewrite of an exported object into what cluster 0 gets.
type Transform interface {
	// Name identifies the transform in errors.
	Name() string
	// AppliesTo says whether the transform concerns obj (the object being built).
	AppliesTo(obj *unstructured.Unstructured) bool
	// Transform rewrites it.Object (never it.Source); p gives the options and
	// the rest of the plan.
	Transform(it *Item, p *Plan) error
}

// DefaultTransforms is the restore's transform chain, in the order it runs.
// Status-reading transforms come before DropStatus; namespace mapping comes
// before the transforms that look up objects by their target key.
func DefaultTransforms() []Transform {
	return []Transform{
		SecretStringData{},
		StripServerFields{},
		StatusURLs{},
		BareMetalHostStatus{},
		DropStatus{},
		MapNamespaces{},
		AgentSafety{},
		PreserveClusterZero{},
		OwnerLinks{},
		Provenance{},
	}
}

// kindIs matches objects by group and kind.
func kindIs(obj *unstructured.Unstructured, group, kind string) bool {
	gk := obj.GroupVersionKind().GroupKind()
	return gk.Group == group && gk.Kind == kind
}

// SecretStringData folds a Secret's stringData into data, so that what is
// applied and what the API server stores compare equal.
type SecretStringData struct{}

func (SecretStringData) Name() string { return "secret-string-data" }
func (SecretStringData) AppliesTo(obj *unstructured.Unstructured) bool {
	return kindIs(obj, "", "Secret")
}
func (SecretStringData) Transform(it *Item, _ *Plan) error {
	sd, found, err := unstructured.NestedMap(it.Object.Object, "stringData")
	if err != nil || !found {
		return err
	}
	data, _, err := unstructured.NestedMap(it.Object.Object, "data")
	if err != nil {
		return fmt.Errorf("secret data: %w", err)
	}
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("stringData key %q is not a string", k)
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	delete(it.Object.Object, "stringData")
	return unstructured.SetNestedMap(it.Object.Object, data, "data")
}

// serverFields are the metadata fields the API server owns.
var serverFields = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink", "generateName",
	// Finalizers belong to the controllers that add them on their first
	// reconcile; restored ones would make objects undeletable where that
	// controller does not run.
	"finalizers",
	// Owner references hold node-0 UIDs; OwnerLinks rebuilds them.
	"ownerReferences",
}

// StripServerFields removes the fields the API server sets (uid,
// resourceVersion, managedFields, ...), finalizers, owner references and the
// last-applied-configuration annotation, which may hold a copy of Secret data.
type StripServerFields struct{}

func (StripServerFields) Name() string                                  { return "strip-server-fields" }
func (StripServerFields) AppliesTo(obj *unstructured.Unstructured) bool { return true }
func (StripServerFields) Transform(it *Item, _ *Plan) error {
	for _, f := range serverFields {
		unstructured.RemoveNestedField(it.Object.Object, "metadata", f)
	}
	ann := it.Object.GetAnnotations()
	if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		setAnnotations(it.Object, ann)
	}
	return nil
}

// DropStatus removes status. What must survive was captured before it runs
// (StatusURLs into Item.Status, BareMetalHostStatus into an annotation); the
// rest is recomputed from the database by the controllers.
type DropStatus struct{}

func (DropStatus) Name() string                                  { return "drop-status" }
func (DropStatus) AppliesTo(obj *unstructured.Unstructured) bool { return true }
func (DropStatus) Transform(it *Item, _ *Plan) error {
	delete(it.Object.Object, "status")
	return nil
}

// Provenance records the bundle digest on every object.
type Provenance struct{}

func (Provenance) Name() string                                  { return "provenance" }
func (Provenance) AppliesTo(obj *unstructured.Unstructured) bool { return true }
func (Provenance) Transform(it *Item, p *Plan) error {
	if p.opts.BundleDigest == "" {
		return nil
	}
	ann := it.Object.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationBundleDigest] = p.opts.BundleDigest
	setAnnotations(it.Object, ann)
	return nil
}

// setAnnotations sets annotations, removing the field when they are empty.
func setAnnotations(obj *unstructured.Unstructured, ann map[string]string) {
	if len(ann) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
		return
	}
	obj.SetAnnotations(ann)
}
