package recreate

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// node0Index holds node 0's exported CRs by kind, namespace and name, as
// node 0 had them (source namespaces), and also under their mapped namespace:
// a rerun reads rows whose kube keys the first run already moved.
type node0Index struct {
	objs map[string]*unstructured.Unstructured
	list []*unstructured.Unstructured
	used map[*unstructured.Unstructured]bool
}

func indexNode0(objs []*unstructured.Unstructured, mapNS func(string) string) *node0Index {
	x := &node0Index{objs: map[string]*unstructured.Unstructured{}, used: map[*unstructured.Unstructured]bool{}}
	for _, o := range objs {
		if o == nil {
			continue
		}
		c := &unstructured.Unstructured{Object: normalizeNumbers(o.DeepCopy().Object).(map[string]any)}
		x.list = append(x.list, c)
		if mapped := mapNS(c.GetNamespace()); mapped != c.GetNamespace() {
			x.objs[key(c.GetKind(), mapped, c.GetName())] = c
		}
	}
	for _, c := range x.list { // a source namespace wins over a mapped one
		x.objs[key(c.GetKind(), c.GetNamespace(), c.GetName())] = c
	}
	return x
}

func (x *node0Index) get(kind, ns, name string) *unstructured.Unstructured {
	if x == nil || name == "" {
		return nil
	}
	return x.objs[key(kind, ns, name)]
}

// node0Cluster are node 0's CRs of one cluster row.
type node0Cluster struct{ cd, aci, pull, cis *unstructured.Unstructured }

// cluster finds the ClusterDeployment named by the row's kube key, and the
// AgentClusterInstall, pull secret and ClusterImageSet it references.
func (x *node0Index) cluster(c *Cluster) node0Cluster {
	var n node0Cluster
	if c.KubeKeyName == "" || c.KubeKeyNamespace == "" {
		return n
	}
	n.cd = x.get(kindCD, c.KubeKeyNamespace, c.KubeKeyName)
	if n.cd == nil {
		return n
	}
	n.aci = x.get(kindACI, c.KubeKeyNamespace, getString(n.cd, "spec.clusterInstallRef.name"))
	n.pull = x.get(kindSecret, c.KubeKeyNamespace, getString(n.cd, "spec.pullSecretRef.name"))
	if n.aci != nil {
		n.cis = x.get(kindCIS, "", getString(n.aci, "spec.imageSetRef.name"))
	}
	return n
}

func (x *node0Index) clusterNames(c *Cluster) manifestNames {
	n := x.cluster(c)
	var names manifestNames
	if n.cd != nil {
		names.aci = getString(n.cd, "spec.clusterInstallRef.name")
		names.pull = getString(n.cd, "spec.pullSecretRef.name")
	}
	if n.aci != nil {
		names.cis = getString(n.aci, "spec.imageSetRef.name")
	}
	return names
}

// infraEnv finds the InfraEnv of a row by its kube key (name, namespace).
func (x *node0Index) infraEnv(ie *InfraEnv) *unstructured.Unstructured {
	if ie.KubeKeyNamespace == "" {
		return nil
	}
	return x.get(kindInfraEnv, ie.KubeKeyNamespace, ie.Name)
}

// agent finds the Agent of a host row: named after the host, in its kube
// key's namespace.
func (x *node0Index) agent(h *Host) *unstructured.Unstructured {
	if h.KubeKeyNamespace == "" {
		return nil
	}
	return x.get(kindAgent, h.KubeKeyNamespace, h.ID)
}

// nmStateConfig finds node 0's NMStateConfig with the same MAC addresses,
// preferring one the InfraEnv's selector matches.
func (x *node0Index) nmStateConfig(ie *unstructured.Unstructured, ifaces []macInterface) *unstructured.Unstructured {
	if x == nil || len(x.list) == 0 {
		return nil
	}
	want := macSet(ifaces)
	sel := map[string]any{}
	if ie != nil {
		sel = getMap(ie, "spec.nmStateConfigLabelSelector.matchLabels")
	}
	var fallback *unstructured.Unstructured
	for _, o := range x.sorted(kindNMState) {
		if x.used[o] || nmStateMACs(o) != want {
			continue
		}
		if labelsMatch(sel, o.GetLabels()) {
			return o
		}
		if fallback == nil {
			fallback = o
		}
	}
	return fallback
}

func macSet(ifaces []macInterface) string {
	var macs []string
	for _, i := range ifaces {
		macs = append(macs, strings.ToLower(i.MacAddress))
	}
	sort.Strings(macs)
	return strings.Join(macs, ",")
}

func nmStateMACs(o *unstructured.Unstructured) string {
	var macs []string
	for _, i := range getSlice(o, "spec.interfaces") {
		if im, ok := i.(map[string]any); ok {
			mac, _ := im["macAddress"].(string)
			macs = append(macs, strings.ToLower(mac))
		}
	}
	sort.Strings(macs)
	return strings.Join(macs, ",")
}

func labelsMatch(sel map[string]any, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if s, _ := v.(string); labels[k] != s {
			return false
		}
	}
	return true
}

func (x *node0Index) sorted(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range x.list {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return keyOf(out[i]) < keyOf(out[j]) })
	return out
}

func keyOf(o *unstructured.Unstructured) string {
	return key(o.GetKind(), o.GetNamespace(), o.GetName())
}

// referenced re-creates the Secrets and ConfigMaps node 0's objects reference
// (pull secrets, mirror registries, ignition CAs and tokens, manifests), as
// node 0 had them.
func (x *node0Index) referenced(p *plan, objs ...*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o == nil {
			continue
		}
		for _, r := range references(o) {
			for _, kind := range []string{kindSecret, kindCM} {
				if src := x.get(kind, r.ns, r.name); src != nil {
					out = append(out, p.fromNode0(src, p.mapNS(r.ns), src.GetName()))
				}
			}
		}
	}
	return out
}

type objRef struct{ ns, name string }

// references lists the {name[, namespace]} objects o's spec names in fields
// ending in Ref, Reference or Refs; a reference without a namespace is in o's.
func references(o *unstructured.Unstructured) []objRef {
	var out []objRef
	add := func(v any) {
		r, ok := v.(map[string]any)
		if !ok {
			return
		}
		name, _ := r["name"].(string)
		ns, _ := r["namespace"].(string)
		if ns == "" {
			ns = o.GetNamespace()
		}
		if name != "" {
			out = append(out, objRef{ns, name})
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				switch {
				case strings.HasSuffix(k, "Ref") || strings.HasSuffix(k, "Reference"):
					add(e)
				case strings.HasSuffix(k, "Refs"):
					if list, ok := e.([]any); ok {
						for _, r := range list {
							add(r)
						}
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(o.Object["spec"])
	return out
}

// from returns the object a row re-creates: node 0's exported CR when there
// is one, else the built object over the install manifest (see overlay).
func (p *plan) from(built, exported, manifest *unstructured.Unstructured) *unstructured.Unstructured {
	if exported != nil {
		return p.fromNode0(exported, built.GetNamespace(), built.GetName())
	}
	out := p.overlay(built, manifest)
	if manifest != nil {
		p.origins[keyOf(out)] = &Origin{Source: OriginManifests, Object: clean(manifest)}
	}
	return out
}

// fromNode0 re-creates node 0's object as it was, without what the API server
// owns (status, UID, owner references, finalizers), in namespace ns; the
// namespaces its references name move with the mapping.
func (p *plan) fromNode0(src *unstructured.Unstructured, ns, name string) *unstructured.Unstructured {
	p.node0.used[src] = true
	out := clean(src)
	if src.GetNamespace() != "" {
		out.SetNamespace(ns)
	}
	out.SetName(name)
	p.mapRefNamespaces(out.Object["spec"])
	p.origins[keyOf(out)] = &Origin{Source: OriginExported, Object: clean(src)}
	return out
}

func (p *plan) mapRefNamespaces(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "namespace" {
				t[k] = p.mapNS(s)
				continue
			}
			p.mapRefNamespaces(e)
		}
	case []any:
		for _, e := range t {
			p.mapRefNamespaces(e)
		}
	}
}

// unmatchedNode0 re-creates node 0's NMStateConfigs no row's static network
// configuration matched: node 0 had them, and Diff shows what the InfraEnv
// controller would make of them.
func (p *plan) unmatchedNode0() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range p.node0.sorted(kindNMState) {
		if !p.node0.used[o] {
			out = append(out, p.fromNode0(o, p.mapNS(o.GetNamespace()), o.GetName()))
		}
	}
	return out
}

// node0Missing lists node 0's CRs no row re-creates.
func (p *plan) node0Missing() []*Origin {
	var out []*Origin
	for _, kind := range []string{kindCD, kindACI, kindInfraEnv, kindAgent} {
		for _, o := range p.node0.sorted(kind) {
			if !p.node0.used[o] {
				out = append(out, &Origin{Source: OriginExported, Object: clean(o)})
			}
		}
	}
	return out
}

// pruneUnreferenced drops Secrets and ConfigMaps no other object references:
// a built one that node 0's CR replaced by its own.
func (p *plan) pruneUnreferenced(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	refd := map[string]bool{}
	for _, o := range objs {
		if k := o.GetKind(); k == kindSecret || k == kindCM {
			continue
		}
		for _, r := range references(o) {
			refd[r.ns+"/"+r.name] = true
		}
	}
	out := objs[:0]
	for _, o := range objs {
		if k := o.GetKind(); (k == kindSecret || k == kindCM) && !refd[o.GetNamespace()+"/"+o.GetName()] {
			delete(p.origins, keyOf(o))
			continue
		}
		out = append(out, o)
	}
	return out
}
