package resources

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultFieldManager is the server-side apply field manager of a restore.
const DefaultFieldManager = "kubectl-assisted"

// AnnotationBundleDigest marks every restored object with the digest of the
// bundle it came from; a rerun of the same bundle treats such objects as its own.
const AnnotationBundleDigest = "kubectl-assisted.io/bundle-digest"

// ExistingPolicy says what to do with an object that already exists on the target.
type ExistingPolicy string

// Existing policies (--existing).
const (
	// ExistingFail stops the restore before any change when an object exists and
	// differs from the bundle's. Identical objects and namespaces are not conflicts.
	ExistingFail ExistingPolicy = "fail"
	// ExistingSkip leaves existing objects as they are.
	ExistingSkip ExistingPolicy = "skip"
	// ExistingUpdate applies the bundle's object over the existing one, taking
	// ownership of conflicting fields.
	ExistingUpdate ExistingPolicy = "update"
)

// DryRun is how much of a restore really happens (--dry-run).
type DryRun string

// Dry-run modes.
const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client" // read the cluster, write nothing
	DryRunServer DryRun = "server" // send every write with dryRun=All
)

// URLSigner signs a rewritten status URL for cluster 0's assisted-service
// (AUTH_TYPE=local: an api_key query parameter, a JWT with a cluster_id or
// infra_env_id claim). restore/auth provides one.
type URLSigner interface {
	SignURL(u string, clusterID, infraEnvID string) (string, error)
}

// Options configure a restore of resources. The zero value (plus nothing) is
// valid: fail on conflicts, no dry run, status URLs removed.
type Options struct {
	// NamespaceMapping maps source namespaces to target namespaces; it rewrites
	// metadata.namespace and the namespace fields of spec references.
	NamespaceMapping map[string]string
	// ServiceURL is cluster 0's assisted-service base URL (its SERVICE_BASE_URL).
	// Status URLs from node 0 are rewritten onto it; when empty they are removed.
	ServiceURL string
	// ImageServiceURL is cluster 0's image service base URL. A BareMetalHost's
	// image URLs on node 0's image service are moved onto it; without it such
	// a host fails the plan.
	ImageServiceURL string
	// Signer signs the rewritten URLs when Apply writes them; without it they
	// carry no api_key. It may be set later with Plan.SetSigner, once the
	// local-auth key exists.
	Signer URLSigner
	// SourceURLs are extra node-0 base URLs (e.g. from the bundle metadata) that
	// must not survive in any applied object; hosts of the status URLs found in
	// the input are always included.
	SourceURLs []string
	// ClusterZero names (source namespace/name) the ClusterDeployment of cluster 0
	// itself, which gets spec.preserveOnDelete. Empty: the only ClusterDeployment
	// of the input; an error when there are several.
	ClusterZero *ObjectKey
	// Existing is the policy for objects that already exist (default fail).
	Existing ExistingPolicy
	// DryRun (default none).
	DryRun DryRun
	// FieldManager for server-side apply (default DefaultFieldManager).
	FieldManager string
	// BundleDigest is recorded in AnnotationBundleDigest on every object.
	BundleDigest string
	// SkipUnknownKinds lists objects of kinds outside Order as skipped instead of
	// failing the plan.
	SkipUnknownKinds bool
	// Transforms replaces DefaultTransforms (tests, or a caller adding its own).
	Transforms []Transform
	// Logger receives one line per object (never object data); default discard.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Existing == "" {
		o.Existing = ExistingFail
	}
	if o.DryRun == "" {
		o.DryRun = DryRunNone
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Transforms == nil {
		o.Transforms = DefaultTransforms()
	}
}

// Validate checks the enumerated options.
func (o *Options) Validate() error {
	switch o.Existing {
	case "", ExistingFail, ExistingSkip, ExistingUpdate:
	default:
		return fmt.Errorf("invalid existing policy %q: want fail, skip or update", o.Existing)
	}
	switch o.DryRun {
	case "", DryRunNone, DryRunClient, DryRunServer:
	default:
		return fmt.Errorf("invalid dry-run mode %q: want none, client or server", o.DryRun)
	}
	for from, to := range o.NamespaceMapping {
		if from == "" || to == "" {
			return fmt.Errorf("invalid namespace mapping %q=%q: both sides are required", from, to)
		}
	}
	return nil
}

// MapNamespace returns the target namespace of a source namespace.
func (o Options) MapNamespace(ns string) string {
	if to, ok := o.NamespaceMapping[ns]; ok {
		return to
	}
	return ns
}

// ObjectKey names an object: group, kind, namespace (empty when cluster-scoped), name.
type ObjectKey struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (k ObjectKey) String() string {
	gk := k.Kind
	if k.Group != "" {
		gk += "." + k.Group
	}
	if k.Namespace == "" {
		return gk + "/" + k.Name
	}
	return gk + " " + k.Namespace + "/" + k.Name
}

// KeyOf is the key of an object as it is now.
func KeyOf(obj *unstructured.Unstructured) ObjectKey {
	return ObjectKey{Group: obj.GroupVersionKind().Group, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// OwnerLink is an owner reference to set once the owner's UID on the target is known.
type OwnerLink struct {
	APIVersion         string
	Kind               string
	Name               string
	Controller         *bool
	BlockOwnerDeletion *bool
}

func (l OwnerLink) key(ns string) ObjectKey {
	gv, _ := schema.ParseGroupVersion(l.APIVersion)
	return ObjectKey{Group: gv.Group, Kind: l.Kind, Namespace: ns, Name: l.Name}
}

// Item is one object of a plan.
type Item struct {
	// Step is the index of the object's kind in Order.
	Step int
	// Source is the object as exported from node 0 (never modified).
	Source *unstructured.Unstructured
	// Object is what is applied: Source after the transforms.
	Object *unstructured.Unstructured
	// Owners are the owner references to set, by owner name; their UIDs are
	// filled in at apply time.
	Owners []OwnerLink
	// Status, when set, is written to the status subresource after the object
	// (the fields that must be restored; everything else is recomputed).
	Status map[string]any
	// Skip, when set, is why the object is not applied.
	Skip string
	// Notes explain what the transforms changed that a reader should know.
	Notes []string

	statusSign map[string]signFor // the claim each Status URL is signed with, by field path
}

// Key is the item's target key.
func (it *Item) Key() ObjectKey { return KeyOf(it.Object) }

// Note records a remark for the item's result.
func (it *Item) Note(format string, args ...any) {
	it.Notes = append(it.Notes, fmt.Sprintf(format, args...))
}

// Plan is the ordered, transformed set of objects to apply.
type Plan struct {
	Items []*Item
	// Unknown lists the objects whose kind is not in Order (only with SkipUnknownKinds).
	Unknown []ObjectKey
	// NodeZeroURLs are the node-0 base URLs (scheme://host[:port]) that the plan
	// verified are gone from every object.
	NodeZeroURLs []string

	opts        Options
	clusterZero *ObjectKey // source key
}

// SetSigner sets the signer of status URLs after planning: the restore plans
// (and checks) before it creates the local-auth key that signs them.
func (p *Plan) SetSigner(s URLSigner) { p.opts.Signer = s }

// Options returns the (defaulted) options the plan was made with.
func (p *Plan) Options() Options { return p.opts }

// Objects returns the objects to apply, in order (skipped ones excluded).
func (p *Plan) Objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, it := range p.Items {
		if it.Skip == "" {
			out = append(out, it.Object)
		}
	}
	return out
}

// UnknownKindsError lists input objects of kinds that are never restored.
type UnknownKindsError struct{ Objects []ObjectKey }

func (e *UnknownKindsError) Error() string {
	names := make([]string, len(e.Objects))
	for i, k := range e.Objects {
		names[i] = k.String()
	}
	return fmt.Sprintf("%d object(s) of kinds the restore does not know: %s (restorable kinds are listed in the restore order)", len(names), strings.Join(names, ", "))
}

// NewPlan sorts objs into the restore order and transforms them. It never
// modifies objs and never talks to a cluster.
func NewPlan(objs []*unstructured.Unstructured, opts Options) (*Plan, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.defaults()
	p := &Plan{opts: opts}
	seen := map[ObjectKey]bool{}
	for _, src := range objs {
		if src == nil {
			continue
		}
		k := KeyOf(src)
		if k.Name == "" || k.Kind == "" {
			return nil, fmt.Errorf("object without kind or name: %s", k)
		}
		step := StepIndex(src)
		if step < 0 {
			p.Unknown = append(p.Unknown, k)
			continue
		}
		if Order[step].Namespaced && k.Namespace == "" {
			return nil, fmt.Errorf("%s has no namespace", k)
		}
		if seen[k] {
			return nil, fmt.Errorf("%s appears twice in the input", k)
		}
		seen[k] = true
		p.Items = append(p.Items, &Item{Step: step, Source: src, Object: src.DeepCopy()})
	}
	if len(p.Unknown) > 0 && !opts.SkipUnknownKinds {
		return nil, &UnknownKindsError{Objects: p.Unknown}
	}
	sort.SliceStable(p.Items, func(i, j int) bool {
		a, b := p.Items[i], p.Items[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		if a.Source.GetNamespace() != b.Source.GetNamespace() {
			return a.Source.GetNamespace() < b.Source.GetNamespace()
		}
		return a.Source.GetName() < b.Source.GetName()
	})
	cz, err := p.findClusterZero()
	if err != nil {
		return nil, err
	}
	p.clusterZero = cz
	p.NodeZeroURLs = nodeZeroBases(objs, opts.SourceURLs)
	for _, it := range p.Items {
		for _, t := range opts.Transforms {
			if !t.AppliesTo(it.Object) {
				continue
			}
			if err := t.Transform(it, p); err != nil {
				return nil, fmt.Errorf("transform %s of %s: %w", t.Name(), KeyOf(it.Source), err)
			}
		}
	}
	targets := map[ObjectKey]bool{}
	for _, it := range p.Items {
		if targets[it.Key()] {
			return nil, fmt.Errorf("two objects map to %s: check the namespace mapping", it.Key())
		}
		targets[it.Key()] = true
	}
	if err := p.checkNoNodeZeroURL(); err != nil {
		return nil, err
	}
	return p, nil
}

// findClusterZero resolves which ClusterDeployment describes cluster 0.
func (p *Plan) findClusterZero() (*ObjectKey, error) {
	var cds []ObjectKey
	for _, it := range p.Items {
		if Order[it.Step].Kind == "ClusterDeployment" {
			cds = append(cds, KeyOf(it.Source))
		}
	}
	if want := p.opts.ClusterZero; want != nil {
		for _, k := range cds {
			if k.Namespace == want.Namespace && k.Name == want.Name {
				return &k, nil
			}
		}
		return nil, fmt.Errorf("cluster 0's ClusterDeployment %s/%s is not in the bundle", want.Namespace, want.Name)
	}
	switch len(cds) {
	case 0:
		return nil, nil
	case 1:
		return &cds[0], nil
	}
	return nil, errors.New("the bundle holds several ClusterDeployments: name cluster 0's own (it gets spec.preserveOnDelete)")
}
