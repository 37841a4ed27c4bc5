package recreate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Options says where the re-created objects go and what they start from.
type Options struct {
	// Namespace receives the objects of rows that carry no kube key and that
	// the install manifests do not place. Empty means the namespace of the
	// install manifests; rows with kube keys keep theirs.
	Namespace string
	// NamespaceMapping moves node 0's namespaces (the rows' kube keys, the
	// exported CRs', the install manifests') to other ones; a namespace it
	// does not name stays where it is.
	NamespaceMapping map[string]string
	// Node0 are node 0's CRs as the bundle exported them (a node 0 with a
	// Kubernetes API), with the Secrets and ConfigMaps they reference, or nil.
	// A row whose CR is among them is re-created as that CR: every field the
	// database cannot tell (holdInstallation, selectors, labels, hostnames)
	// stays as node 0 had it.
	Node0 []*unstructured.Unstructured
	// Manifests are node 0's install manifests (ABI's /etc/assisted/manifests),
	// or nil. Objects start from them and the rows fill what they lack.
	Manifests *Manifests
	// PreferDatabase lets row values replace the manifest values they disagree
	// with, instead of keeping the manifest value and reporting it in Diff.
	PreferDatabase bool
}

// Result is what FromRows and Build produce.
type Result struct {
	// Objects are the CRs and the Secrets/ConfigMaps they reference, in the
	// restore order (ClusterImageSet, Secrets and ConfigMaps,
	// ClusterDeployment, AgentClusterInstall, NMStateConfig, InfraEnv, Agent),
	// without server fields, status or owner references. The namespace itself
	// is not among them.
	Objects []*unstructured.Unstructured
	// Keys are the kube keys to write into the rows before any object exists.
	Keys KubeKeys
	// Rows are the rows the objects were built from, with Keys applied; pass
	// them to Diff.
	Rows *Rows
	// Origins are node 0's objects (exported CRs or install manifests, as
	// node 0 had them) the objects were re-created from, by the re-created
	// object's kind, namespace and name; DiffNode0 compares the two.
	Origins map[string]*Origin
	// Node0Missing are node 0's CRs no row re-creates (an Agent without a
	// host row would make the controller invent a host).
	Node0Missing []*Origin
}

// Origin is the node-0 object a re-created object comes from.
type Origin struct {
	// Source is OriginExported or OriginManifests.
	Source string
	Object *unstructured.Unstructured
}

// Sources of node 0's objects.
const (
	OriginExported  = "exported"
	OriginManifests = "manifests"
)

// ErrNoNamespace is returned when neither Options.Namespace nor the manifests
// say where the objects go.
var ErrNoNamespace = errors.New("no namespace for the re-created resources: give one, or the install manifests")

// Build reads the rows through q and builds the objects from them.
func Build(ctx context.Context, q Querier, opts Options) (*Result, error) {
	rows, err := Load(ctx, q)
	if err != nil {
		return nil, err
	}
	return FromRows(rows, opts)
}

// FromRows builds the objects for every cluster, infra-env and host in rows.
// It does not change rows; Result.Rows is a copy with the kube keys applied.
func FromRows(rows *Rows, opts Options) (*Result, error) {
	p, err := newPlan(copyRows(rows), opts)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, c := range p.rows.Clusters {
		cobjs, err := p.clusterObjects(c)
		if err != nil {
			return nil, err
		}
		objs = append(objs, cobjs...)
	}
	for _, ie := range p.rows.InfraEnvs {
		ieobjs, err := p.infraEnvObjects(ie)
		if err != nil {
			return nil, err
		}
		objs = append(objs, ieobjs...)
	}
	for _, h := range p.rows.Hosts {
		a, extra, err := p.agent(h)
		if err != nil {
			return nil, err
		}
		objs = append(objs, extra...)
		objs = append(objs, a)
	}
	objs = append(objs, p.unmatchedManifests()...)
	objs = append(objs, p.unmatchedNode0()...)
	objs = dedupe(objs)
	objs = p.pruneUnreferenced(objs)
	sortForRestore(objs)
	keys := p.keys()
	keys.Apply(p.rows)
	return &Result{Objects: objs, Keys: keys, Rows: p.rows, Origins: p.origins, Node0Missing: p.node0Missing()}, nil
}

// restoreRank is the order objects are applied in: everything a controller
// reads exists before the object it reconciles (ARCHITECTURE "CR order").
var restoreRank = map[string]int{
	kindCIS: 0, kindSecret: 1, kindCM: 1, kindCD: 2, kindACI: 3, kindNMState: 4, kindInfraEnv: 5, kindAgent: 6,
}

func sortForRestore(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		return restoreRank[objs[i].GetKind()] < restoreRank[objs[j].GetKind()]
	})
}

// dedupe drops a later object with the same kind, namespace and name as an
// earlier one (a Secret shared by a cluster and its infra-env).
func dedupe(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[string]bool{}
	out := objs[:0]
	for _, o := range objs {
		k := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if !seen[k] {
			seen[k] = true
			out = append(out, o)
		}
	}
	return out
}

func copyRows(r *Rows) *Rows {
	out := &Rows{}
	for _, c := range r.Clusters {
		cc := *c
		out.Clusters = append(out.Clusters, &cc)
	}
	for _, ie := range r.InfraEnvs {
		cc := *ie
		out.InfraEnvs = append(out.InfraEnvs, &cc)
	}
	for _, h := range r.Hosts {
		cc := *h
		out.Hosts = append(out.Hosts, &cc)
	}
	return out
}

// plan holds the names and namespaces chosen for every row before any
// object is built, so references between objects agree.
type plan struct {
	rows      *Rows
	opts      Options
	ns        string // the namespace of rows without a kube key
	names     namer
	cd        map[string]string // cluster id -> ClusterDeployment (and ACI) name
	aci       map[string]string // cluster id -> AgentClusterInstall name
	pull      map[string]string // cluster id -> pull-secret name
	cis       map[string]string // cluster id -> ClusterImageSet name
	infraEnv  map[string]string // infra-env id -> InfraEnv name
	mirror    map[string]string // cluster id -> mirror registry ConfigMap name
	clusterNS map[string]string // cluster id -> namespace
	ieNS      map[string]string // infra-env id -> namespace
	manifests *matchedManifests
	node0     *node0Index
	origins   map[string]*Origin
}

func newPlan(rows *Rows, opts Options) (*plan, error) {
	p := &plan{rows: rows, opts: opts, names: namer{},
		cd: map[string]string{}, aci: map[string]string{}, pull: map[string]string{}, cis: map[string]string{},
		infraEnv: map[string]string{}, mirror: map[string]string{}, clusterNS: map[string]string{}, ieNS: map[string]string{},
		origins: map[string]*Origin{}}
	p.node0 = indexNode0(opts.Node0, p.mapNS)
	mm, err := matchManifests(rows, opts.Manifests)
	if err != nil {
		return nil, err
	}
	p.manifests = mm
	p.ns = opts.Namespace
	if mns := mm.namespace(); mns != "" {
		p.ns = p.mapNS(mns)
	}
	// Rows with kube keys keep their names and namespaces (moved only by the
	// mapping): they are the names node 0's controllers and CRs used.
	for _, c := range rows.Clusters {
		if c.KubeKeyName == "" || c.KubeKeyNamespace == "" {
			continue
		}
		ns := p.mapNS(c.KubeKeyNamespace)
		p.clusterNS[c.ID] = ns
		p.cd[c.ID] = p.names.take(kindCD, ns, c.KubeKeyName, c.ID)
		n := p.node0.clusterNames(c)
		p.aci[c.ID] = p.names.take(kindACI, ns, orDefault(n.aci, c.KubeKeyName), c.ID)
		p.pull[c.ID] = p.names.take(kindSecret, ns, orDefault(n.pull, c.KubeKeyName+"-pull-secret"), c.ID)
		if n.cis != "" {
			p.cis[c.ID] = p.names.take(kindCIS, "", n.cis, c.ID)
		}
	}
	for _, ie := range rows.InfraEnvs {
		if ie.KubeKeyNamespace == "" || ie.Name == "" {
			continue
		}
		ns := p.mapNS(ie.KubeKeyNamespace)
		p.ieNS[ie.ID] = ns
		p.infraEnv[ie.ID] = p.names.take(kindInfraEnv, ns, ie.Name, ie.ID)
	}
	// Manifest names are taken next so generated names never collide with them.
	for id, n := range mm.names {
		if n.cd == "" || p.cd[id] != "" {
			continue
		}
		p.clusterNS[id] = p.ns
		p.cd[id] = p.names.take(kindCD, p.ns, n.cd, id)
		p.aci[id] = p.names.take(kindACI, p.ns, orDefault(n.aci, n.cd), id)
		p.pull[id] = p.names.take(kindSecret, p.ns, orDefault(n.pull, n.cd+"-pull-secret"), id)
		if n.cis != "" {
			p.cis[id] = p.names.take(kindCIS, "", n.cis, id)
		}
	}
	for id, n := range mm.infraEnvNames {
		if p.infraEnv[id] == "" {
			p.ieNS[id] = p.ns
			p.infraEnv[id] = p.names.take(kindInfraEnv, p.ns, n, id)
		}
	}
	images := map[string]string{} // release image -> ClusterImageSet name
	for _, c := range rows.Clusters {
		if c.OCPReleaseImage == "" {
			return nil, fmt.Errorf("cluster %s has no release image (clusters.ocp_release_image): cannot re-create its ClusterImageSet", c.ID)
		}
		if _, done := p.cd[c.ID]; !done {
			if p.ns == "" {
				return nil, ErrNoNamespace
			}
			p.clusterNS[c.ID] = p.ns
			p.cd[c.ID] = p.names.take(kindCD, p.ns, dnsLabel(c.Name), c.ID)
			p.aci[c.ID] = p.names.take(kindACI, p.ns, p.cd[c.ID], c.ID)
			p.pull[c.ID] = p.names.take(kindSecret, p.ns, p.cd[c.ID]+"-pull-secret", c.ID)
		}
		if p.cis[c.ID] == "" {
			if name, ok := images[c.OCPReleaseImage]; ok {
				p.cis[c.ID] = name
			} else {
				p.cis[c.ID] = p.names.take(kindCIS, "", dnsSubdomain("openshift-"+c.OpenshiftVersion), c.ID)
			}
		}
		images[c.OCPReleaseImage] = p.cis[c.ID]
	}
	for _, ie := range rows.InfraEnvs {
		if _, done := p.infraEnv[ie.ID]; !done {
			ns := p.ns
			if c := rows.cluster(ie.ClusterID); c != nil && p.clusterNS[c.ID] != "" {
				ns = p.clusterNS[c.ID] // an infra-env goes where its cluster is
			}
			if ns == "" {
				return nil, ErrNoNamespace
			}
			p.ieNS[ie.ID] = ns
			p.infraEnv[ie.ID] = p.names.take(kindInfraEnv, ns, dnsLabel(ie.Name), ie.ID)
		}
	}
	for _, h := range rows.Hosts {
		if p.hostNS(h) == "" {
			return nil, ErrNoNamespace
		}
	}
	return p, nil
}

// mapNS applies the namespace mapping.
func (p *plan) mapNS(ns string) string {
	if to, ok := p.opts.NamespaceMapping[ns]; ok && to != "" {
		return to
	}
	return ns
}

// hostNS is the namespace of a host's Agent: its kube key's (mapped), else
// its infra-env's.
func (p *plan) hostNS(h *Host) string {
	if h.KubeKeyNamespace != "" {
		return p.mapNS(h.KubeKeyNamespace)
	}
	if ns := p.ieNS[h.InfraEnvID]; ns != "" {
		return ns
	}
	return p.ns
}

func (p *plan) keys() KubeKeys {
	var k KubeKeys
	for _, c := range p.rows.Clusters {
		k.Clusters = append(k.Clusters, ClusterKey{ID: c.ID, Name: p.cd[c.ID], Namespace: p.clusterNS[c.ID]})
	}
	for _, ie := range p.rows.InfraEnvs {
		k.InfraEnvs = append(k.InfraEnvs, InfraEnvKey{ID: ie.ID, Name: p.infraEnv[ie.ID], Namespace: p.ieNS[ie.ID]})
	}
	for _, h := range p.rows.Hosts {
		k.Hosts = append(k.Hosts, HostKey{ID: h.ID, InfraEnvID: h.InfraEnvID, Namespace: p.hostNS(h)})
	}
	return k
}

// dnsSubdomain keeps dots (openshift-4.16.3) and makes the rest label-safe.
func dnsSubdomain(s string) string {
	var parts []string
	for _, part := range strings.Split(s, ".") {
		if l := dnsLabel(part); l != "" {
			parts = append(parts, l)
		}
	}
	out := ""
	for i, part := range parts {
		if i > 0 {
			out += "."
		}
		out += part
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
