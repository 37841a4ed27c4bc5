package resources

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Restore plans objs and applies the plan: NewPlan followed by Apply.
func Restore(ctx context.Context, c Client, objs []*unstructured.Unstructured, opts Options) (*Report, error) {
	p, err := NewPlan(objs, opts)
	if err != nil {
		return nil, err
	}
	return Apply(ctx, c, p)
}

// applier is the state of one Apply.
type applier struct {
	c       Client
	p       *Plan
	opts    Options
	uids    map[ObjectKey]types.UID
	index   map[ObjectKey]int   // target key -> item index
	done    map[int]bool        // items already applied (or existing and kept)
	pending map[ObjectKey][]int // owner key -> children applied before it
	results []Result
}

// Apply applies a plan to the target. It first reads the target (APIs served,
// what exists) and returns a *ConflictError, *UnreachableError or
// *MissingAPIError before changing anything; then it applies the objects in
// order and stops at the first failure. The report is returned with any error
// once results exist.
func Apply(ctx context.Context, c Client, p *Plan) (*Report, error) {
	opts := p.opts
	rep := &Report{FieldManager: opts.FieldManager, Existing: opts.Existing, DryRun: opts.DryRun, BundleDigest: opts.BundleDigest, StartedAt: time.Now().UTC()}
	a := &applier{c: c, p: p, opts: opts, uids: map[ObjectKey]types.UID{}, index: map[ObjectKey]int{},
		done: map[int]bool{}, pending: map[ObjectKey][]int{}, results: make([]Result, len(p.Items))}
	for i, it := range p.Items {
		a.index[it.Key()] = i
		a.results[i] = Result{ObjectKey: it.Key(), Step: it.Step}
		if src := it.Source.GetNamespace(); src != it.Object.GetNamespace() {
			a.results[i].SourceNamespace = src
		}
	}
	finish := func(err error) (*Report, error) {
		rep.Results = a.results
		rep.FinishedAt = time.Now().UTC()
		if err != nil {
			rep.Error = err.Error()
		}
		rep.count()
		return rep, err
	}

	state, err := preflight(ctx, c, p)
	if err != nil {
		a.notAttempted(0, "not attempted: preflight failed")
		return finish(err)
	}
	var conflicts []ObjectKey
	for i, f := range state {
		if f.existing != nil {
			a.uids[p.Items[i].Key()] = f.existing.GetUID()
		}
		if f.class == conflicting {
			conflicts = append(conflicts, p.Items[i].Key())
		}
	}
	if len(conflicts) > 0 && opts.Existing == ExistingFail {
		a.notAttempted(0, "not attempted: conflicts found before any change")
		for i, f := range state {
			if f.class == conflicting {
				a.results[i].Action, a.results[i].Reason = ActionFailed, "exists and differs from the bundle (--existing=fail)"
			}
		}
		return finish(&ConflictError{Objects: conflicts})
	}

	for i, it := range p.Items {
		if err := ctx.Err(); err != nil {
			a.notAttempted(i, "not attempted: the restore was stopped")
			return finish(err)
		}
		if err := a.applyItem(ctx, i, it, state[i]); err != nil {
			a.notAttempted(i+1, fmt.Sprintf("not attempted: %s failed", it.Key()))
			return finish(err)
		}
	}
	return finish(nil)
}

func (a *applier) notAttempted(from int, reason string) {
	for j := from; j < len(a.results); j++ {
		if a.results[j].Action == "" {
			a.results[j].Action, a.results[j].Reason = ActionSkipped, reason
		}
	}
}

func (a *applier) applyItem(ctx context.Context, i int, it *Item, f found) error {
	res := &a.results[i]
	notes := it.Notes
	defer func() {
		if len(notes) > 0 {
			res.Reason = strings.Join(append(nonEmpty(res.Reason), notes...), "; ")
		}
		a.opts.Logger.Info("restore object", "object", res.ObjectKey.String(), "action", string(res.Action))
	}()
	if it.Skip != "" {
		res.Action, res.Reason = ActionSkipped, it.Skip
		return nil
	}
	write := true
	switch f.class {
	case absent:
		res.Action = ActionCreated
	case ours:
		res.Reason = f.class.String()
	case namespace, equivalent:
		write = a.opts.Existing == ExistingUpdate
		res.Reason = f.class.String()
	case conflicting:
		res.Reason = f.class.String()
		if a.opts.Existing == ExistingSkip {
			res.Action, res.Reason = ActionSkipped, res.Reason+" (--existing=skip)"
			write = false
		}
	}
	if !write {
		if res.Action == "" {
			res.Action = ActionUnchanged
		}
		res.UID = string(a.uids[it.Key()])
		a.done[i] = true
		a.linkChildren(ctx, it.Key())
		return nil
	}
	obj, waiting, dropped := a.withOwners(ctx, i, it)
	for _, d := range dropped {
		notes = append(notes, "owner "+d+" is not on the target: reference dropped")
	}
	applied, err := a.apply(ctx, obj)
	if err != nil {
		res.Action, res.Reason = ActionFailed, safeReason(it.Key(), err)
		return &ApplyError{Object: it.Key(), Err: err}
	}
	if f.existing != nil {
		res.Action = ActionUpdated
		if applied != nil && applied.GetResourceVersion() == f.existing.GetResourceVersion() {
			res.Action = ActionUnchanged
		}
	}
	if applied != nil {
		a.uids[it.Key()] = applied.GetUID()
		res.UID = string(applied.GetUID())
	}
	a.done[i] = true
	for _, w := range waiting {
		a.pending[w] = append(a.pending[w], i)
	}
	if it.Status != nil {
		if err := a.applyStatus(ctx, it); err != nil {
			res.Action, res.Reason = ActionFailed, "apply status: "+err.Error()
			return fmt.Errorf("apply status of %s: %w", it.Key(), err)
		}
	}
	a.linkChildren(ctx, it.Key())
	return nil
}

// withOwners is the item's object with owner references resolved to target
// UIDs. Owners later in the plan are returned as waiting; owners neither in
// the plan nor on the target as dropped.
func (a *applier) withOwners(ctx context.Context, i int, it *Item) (obj *unstructured.Unstructured, waiting []ObjectKey, dropped []string) {
	obj = it.Object.DeepCopy()
	var refs []metav1.OwnerReference
	for _, l := range it.Owners {
		k := l.key(obj.GetNamespace())
		uid, ok := a.uids[k]
		if !ok {
			if j, inPlan := a.index[k]; inPlan && !a.done[j] && j != i && a.p.Items[j].Skip == "" {
				waiting = append(waiting, k)
				continue
			}
			uid, ok = a.lookup(ctx, k, l.APIVersion)
		}
		if !ok {
			if a.opts.DryRun != DryRunClient {
				dropped = append(dropped, k.String())
			}
			continue
		}
		refs = append(refs, metav1.OwnerReference{APIVersion: l.APIVersion, Kind: l.Kind, Name: l.Name, UID: uid,
			Controller: l.Controller, BlockOwnerDeletion: l.BlockOwnerDeletion})
	}
	if len(refs) > 0 {
		obj.SetOwnerReferences(refs)
	}
	return obj, waiting, dropped
}

// lookup finds the UID of an owner that is not part of the plan.
func (a *applier) lookup(ctx context.Context, k ObjectKey, apiVersion string) (types.UID, bool) {
	step, known := stepFor(k.groupKind())
	if !known || a.c.Dynamic == nil {
		return "", false
	}
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(apiVersion)
	probe.SetKind(k.Kind)
	if step.Namespaced {
		probe.SetNamespace(k.Namespace)
	}
	cur, err := resourceFor(a.c, probe).Get(ctx, k.Name, metav1.GetOptions{})
	if err != nil {
		return "", false
	}
	a.uids[k] = cur.GetUID()
	return cur.GetUID(), true
}

// linkChildren re-applies the objects that were applied before their owner,
// now that the owner's UID is known.
func (a *applier) linkChildren(ctx context.Context, owner ObjectKey) {
	children := a.pending[owner]
	delete(a.pending, owner)
	for _, ci := range children {
		child := a.p.Items[ci]
		obj, waiting, _ := a.withOwners(ctx, ci, child)
		if len(waiting) > 0 {
			for _, w := range waiting {
				a.pending[w] = append(a.pending[w], ci)
			}
		}
		res := &a.results[ci]
		if _, err := a.apply(ctx, obj); err != nil {
			res.Reason = strings.Join(append(nonEmpty(res.Reason), "owner reference to "+owner.String()+" not set: "+safeReason(child.Key(), err)), "; ")
			continue
		}
		res.Reason = strings.Join(append(nonEmpty(res.Reason), "owner reference to "+owner.String()+" set after it was created"), "; ")
	}
}

func (a *applier) applyOptions() metav1.ApplyOptions {
	o := metav1.ApplyOptions{FieldManager: a.opts.FieldManager, Force: true}
	if a.opts.DryRun == DryRunServer {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

// apply sends one server-side apply (nothing for a client dry run).
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if a.opts.DryRun == DryRunClient {
		return nil, nil
	}
	out, err := resourceFor(a.c, obj).Apply(ctx, obj.GetName(), obj, a.applyOptions())
	if err != nil && isUnreachable(err) {
		return nil, &UnreachableError{Err: err}
	}
	return out, err
}

func (a *applier) applyStatus(ctx context.Context, it *Item) error {
	if a.opts.DryRun == DryRunClient {
		return nil
	}
	status, err := signURLs(it.Status, a.opts.Signer, it.statusSign)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	obj.SetAPIVersion(it.Object.GetAPIVersion())
	obj.SetKind(it.Object.GetKind())
	obj.SetName(it.Object.GetName())
	obj.SetNamespace(it.Object.GetNamespace())
	_, err = resourceFor(a.c, obj).ApplyStatus(ctx, obj.GetName(), obj, a.applyOptions())
	if err != nil && a.opts.DryRun == DryRunServer && apierrors.IsNotFound(err) {
		return nil // the object itself was only created in dry-run
	}
	return err
}

func (k ObjectKey) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.Group, Kind: k.Kind}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// Check runs everything Apply checks before its first write (APIs served,
// reachability, existing objects against the policy) and writes nothing: the
// restore command calls it before it touches the database, so a conflict stops
// the whole restore before any change. The report says what Apply would do.
func Check(ctx context.Context, c Client, p *Plan) (*Report, error) {
	dry := *p
	dry.opts.DryRun = DryRunClient
	return Apply(ctx, c, &dry)
}
