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
	// Namespace receives every namespaced object. Empty means the namespace of
	// the install manifests; one of the two is required.
	Namespace string
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
}

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
	objs = dedupe(objs)
	sortForRestore(objs)
	keys := p.keys()
	keys.Apply(p.rows)
	return &Result{Objects: objs, Keys: keys, Rows: p.rows}, nil
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

// plan holds the names chosen for every row before any object is built, so
// references between objects agree.
type plan struct {
	rows      *Rows
	opts      Options
	ns        string
	names     namer
	cd        map[string]string // cluster id -> ClusterDeployment (and ACI) name
	aci       map[string]string // cluster id -> AgentClusterInstall name
	pull      map[string]string // cluster id -> pull-secret name
	cis       map[string]string // cluster id -> ClusterImageSet name
	infraEnv  map[string]string // infra-env id -> InfraEnv name
	mirror    map[string]string // cluster id -> mirror registry ConfigMap name
	manifests *matchedManifests
}

func newPlan(rows *Rows, opts Options) (*plan, error) {
	p := &plan{rows: rows, opts: opts, ns: opts.Namespace, names: namer{},
		cd: map[string]string{}, aci: map[string]string{}, pull: map[string]string{}, cis: map[string]string{},
		infraEnv: map[string]string{}, mirror: map[string]string{}}
	mm, err := matchManifests(rows, opts.Manifests)
	if err != nil {
		return nil, err
	}
	p.manifests = mm
	if p.ns == "" {
		p.ns = mm.namespace()
	}
	if p.ns == "" {
		return nil, ErrNoNamespace
	}
	// Manifest names are taken first so generated names never collide with them.
	for id, n := range mm.names {
		if n.cd == "" {
			continue
		}
		p.cd[id] = p.names.take(kindCD, n.cd, id)
		p.aci[id] = p.names.take(kindACI, orDefault(n.aci, n.cd), id)
		p.pull[id] = p.names.take(kindSecret, orDefault(n.pull, n.cd+"-pull-secret"), id)
		if n.cis != "" {
			p.cis[id] = p.names.take(kindCIS, n.cis, id)
		}
	}
	for id, n := range mm.infraEnvNames {
		p.infraEnv[id] = p.names.take(kindInfraEnv, n, id)
	}
	images := map[string]string{} // release image -> ClusterImageSet name
	for _, c := range rows.Clusters {
		if c.OCPReleaseImage == "" {
			return nil, fmt.Errorf("cluster %s has no release image (clusters.ocp_release_image): cannot re-create its ClusterImageSet", c.ID)
		}
		if _, done := p.cd[c.ID]; !done {
			p.cd[c.ID] = p.names.take(kindCD, dnsLabel(c.Name), c.ID)
			p.aci[c.ID] = p.names.take(kindACI, p.cd[c.ID], c.ID)
			p.pull[c.ID] = p.names.take(kindSecret, p.cd[c.ID]+"-pull-secret", c.ID)
		}
		if p.cis[c.ID] == "" {
			if name, ok := images[c.OCPReleaseImage]; ok {
				p.cis[c.ID] = name
			} else {
				p.cis[c.ID] = p.names.take(kindCIS, dnsSubdomain("openshift-"+c.OpenshiftVersion), c.ID)
			}
		}
		images[c.OCPReleaseImage] = p.cis[c.ID]
	}
	for _, ie := range rows.InfraEnvs {
		if _, done := p.infraEnv[ie.ID]; !done {
			p.infraEnv[ie.ID] = p.names.take(kindInfraEnv, dnsLabel(ie.Name), ie.ID)
		}
	}
	return p, nil
}

func (p *plan) keys() KubeKeys {
	var k KubeKeys
	for _, c := range p.rows.Clusters {
		k.Clusters = append(k.Clusters, ClusterKey{ID: c.ID, Name: p.cd[c.ID], Namespace: p.ns})
	}
	for _, ie := range p.rows.InfraEnvs {
		k.InfraEnvs = append(k.InfraEnvs, InfraEnvKey{ID: ie.ID, Name: p.infraEnv[ie.ID], Namespace: p.ns})
	}
	for _, h := range p.rows.Hosts {
		k.Hosts = append(k.Hosts, HostKey{ID: h.ID, InfraEnvID: h.InfraEnvID, Namespace: p.ns})
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
