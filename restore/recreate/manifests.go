package recreate

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Manifests are node 0's install manifests: the files the agent-based
// installer writes to /etc/assisted/manifests and registers the cluster from.
type Manifests struct {
	ClusterDeployment   *unstructured.Unstructured
	AgentClusterInstall *unstructured.Unstructured
	InfraEnv            *unstructured.Unstructured
	PullSecret          *unstructured.Unstructured
	ClusterImageSet     *unstructured.Unstructured
	NMStateConfigs      []*unstructured.Unstructured
}

// ManifestFiles maps each file ABI writes to the kind it holds.
var ManifestFiles = map[string]string{
	"cluster-deployment.yaml":    kindCD,
	"agent-cluster-install.yaml": kindACI,
	"infraenv.yaml":              kindInfraEnv,
	"pull-secret.yaml":           kindSecret,
	"cluster-image-set.yaml":     kindCIS,
	"nmstateconfig.yaml":         kindNMState,
}

// LoadManifests reads the manifest files from fsys (os.DirFS of the folder,
// or the bundle's copy); missing files are fine, other files are ignored.
func LoadManifests(fsys fs.FS) (*Manifests, error) {
	mf := &Manifests{}
	names := make([]string, 0, len(ManifestFiles))
	for n := range ManifestFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, file := range names {
		data, err := fs.ReadFile(fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", file, err)
		}
		objs, err := parseObjects(data)
		if err != nil {
			if ManifestFiles[file] == kindSecret {
				return nil, fmt.Errorf("parse manifest %s: not valid YAML", file) // never echo a pull secret
			}
			return nil, fmt.Errorf("parse manifest %s: %w", file, err)
		}
		want := ManifestFiles[file]
		for _, o := range objs {
			if o.GetKind() != want {
				return nil, fmt.Errorf("manifest %s holds a %s, want %s", file, o.GetKind(), want)
			}
		}
		if want == kindNMState {
			mf.NMStateConfigs = objs
			continue
		}
		if len(objs) != 1 {
			return nil, fmt.Errorf("manifest %s holds %d objects, want one %s", file, len(objs), want)
		}
		switch want {
		case kindCD:
			mf.ClusterDeployment = objs[0]
		case kindACI:
			mf.AgentClusterInstall = objs[0]
		case kindInfraEnv:
			mf.InfraEnv = objs[0]
		case kindSecret:
			mf.PullSecret = objs[0]
		case kindCIS:
			mf.ClusterImageSet = objs[0]
		}
	}
	return mf, nil
}

func parseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := d.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: normalizeNumbers(obj).(map[string]any)})
	}
}

// clean drops what the API server owns and turns stringData into data, so a
// manifest merges with a built object field by field.
func clean(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	delete(c.Object, "status")
	meta := getMap(c, "metadata")
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
		"selfLink", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers"} {
		delete(meta, k)
	}
	if sd := getMap(c, "stringData"); sd != nil {
		data := getMap(c, "data")
		if data == nil {
			data = m{}
			c.Object["data"] = data
		}
		for k, v := range sd {
			if s, ok := v.(string); ok {
				data[k] = base64.StdEncoding.EncodeToString([]byte(s))
			}
		}
		delete(c.Object, "stringData")
	}
	return c
}

// merge writes over onto base: maps merge key by key, anything else replaces.
func merge(base, over map[string]any) {
	for k, v := range over {
		if bm, ok := base[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				merge(bm, om)
				continue
			}
		}
		base[k] = v
	}
}

// overlay starts from the manifest when there is one: the built object fills
// what the manifest lacks, and the manifest keeps its values unless the
// options prefer the database. Names and namespaces are the plan's.
func (p *plan) overlay(built, manifest *unstructured.Unstructured) *unstructured.Unstructured {
	if manifest == nil {
		return built
	}
	p.manifests.used[manifest] = true
	man := clean(manifest)
	name, ns, manifestNS := built.GetName(), built.GetNamespace(), man.GetNamespace()
	refs := map[string]any{}
	for _, path := range planRefs[built.GetKind()] {
		if v := get(built, path); v != nil {
			refs[path] = runtime.DeepCopyJSONValue(v) // merge below changes maps in place
		}
	}
	if p.opts.PreferDatabase {
		merge(man.Object, built.Object)
		built = man
	} else {
		merge(built.Object, man.Object)
	}
	built.SetName(name)
	built.SetNamespace(ns)
	for _, path := range planRefs[built.GetKind()] {
		if v, ok := refs[path]; ok {
			set(built, path, v)
		} else if ref := getMap(built, path); ref != nil && ref["namespace"] == manifestNS && ns != "" {
			ref["namespace"] = ns // a reference into the manifests' namespace follows it
		}
	}
	return built
}

// planRefs are the references between objects the plan names: they follow
// the plan (which takes the manifests' names where there are manifests), so
// they stay consistent with the kube keys and the objects built from rows.
var planRefs = map[string][]string{
	kindCD:       {"spec.clusterInstallRef", "spec.pullSecretRef"},
	kindACI:      {"spec.clusterDeploymentRef", "spec.imageSetRef", "spec.mirrorRegistryRef", "spec.ignitionEndpoint.caCertificateReference"},
	kindInfraEnv: {"spec.clusterRef", "spec.pullSecretRef", "spec.mirrorRegistryRef"},
	kindAgent:    {"spec.clusterDeploymentName", "spec.ignitionEndpointTokenReference"},
}

func (p *plan) unmatchedManifests() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	if p.opts.Manifests == nil {
		return nil
	}
	for _, o := range p.opts.Manifests.NMStateConfigs {
		if !p.manifests.used[o] {
			c := clean(o)
			c.SetNamespace(p.ns)
			out = append(out, c)
		}
	}
	return out
}

// manifestNames are the names node 0's manifests gave one cluster's objects.
type manifestNames struct{ cd, aci, pull, cis string }

// matchedManifests knows which rows the manifests describe.
type matchedManifests struct {
	mf            *Manifests
	clusterID     string
	infraEnvID    string
	names         map[string]manifestNames
	infraEnvNames map[string]string
	used          map[*unstructured.Unstructured]bool
}

func matchManifests(rows *Rows, mf *Manifests) (*matchedManifests, error) {
	mm := &matchedManifests{mf: mf, names: map[string]manifestNames{}, infraEnvNames: map[string]string{},
		used: map[*unstructured.Unstructured]bool{}}
	if mf == nil {
		return mm, nil
	}
	if mf.ClusterDeployment != nil || mf.AgentClusterInstall != nil {
		c, err := matchCluster(rows, mf)
		if err != nil {
			return nil, err
		}
		mm.clusterID = c.ID
		mm.names[c.ID] = mf.clusterNames()
	}
	if mf.InfraEnv != nil {
		ie := matchInfraEnv(rows, mf.InfraEnv.GetName(), mm.clusterID)
		if ie == nil {
			return nil, fmt.Errorf("manifest infraenv.yaml describes InfraEnv %q, which matches no infra-env in the database", mf.InfraEnv.GetName())
		}
		mm.infraEnvID = ie.ID
		mm.infraEnvNames[ie.ID] = mf.InfraEnv.GetName()
	}
	return mm, nil
}

func matchCluster(rows *Rows, mf *Manifests) (*Cluster, error) {
	name := ""
	if mf.ClusterDeployment != nil {
		name = getString(mf.ClusterDeployment, "spec.clusterName")
	}
	var found []*Cluster
	for _, c := range rows.Clusters {
		if c.Name == name || len(rows.Clusters) == 1 {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("the install manifests describe cluster %q, which matches %d clusters in the database, want 1", name, len(found))
	}
	return found[0], nil
}

func matchInfraEnv(rows *Rows, name, clusterID string) *InfraEnv {
	var byCluster []*InfraEnv
	for _, ie := range rows.InfraEnvs {
		if ie.Name == name {
			return ie
		}
		if clusterID != "" && ie.ClusterID == clusterID {
			byCluster = append(byCluster, ie)
		}
	}
	if len(byCluster) == 1 {
		return byCluster[0]
	}
	if len(rows.InfraEnvs) == 1 {
		return rows.InfraEnvs[0]
	}
	return nil
}

func (mf *Manifests) clusterNames() manifestNames {
	var n manifestNames
	if cd := mf.ClusterDeployment; cd != nil {
		n.cd = cd.GetName()
		n.aci = getString(cd, "spec.clusterInstallRef.name")
		n.pull = getString(cd, "spec.pullSecretRef.name")
	}
	if aci := mf.AgentClusterInstall; aci != nil {
		n.aci = aci.GetName()
		if n.cd == "" {
			n.cd = getString(aci, "spec.clusterDeploymentRef.name")
		}
		n.cis = getString(aci, "spec.imageSetRef.name")
	}
	if mf.PullSecret != nil {
		n.pull = mf.PullSecret.GetName()
	}
	if mf.ClusterImageSet != nil {
		n.cis = mf.ClusterImageSet.GetName()
	}
	return n
}

func (mm *matchedManifests) namespace() string {
	if mm.mf == nil {
		return ""
	}
	for _, o := range []*unstructured.Unstructured{mm.mf.ClusterDeployment, mm.mf.AgentClusterInstall, mm.mf.InfraEnv, mm.mf.PullSecret} {
		if o != nil && o.GetNamespace() != "" {
			return o.GetNamespace()
		}
	}
	return ""
}

func (mm *matchedManifests) forCluster(id string, pick func(*Manifests) *unstructured.Unstructured) *unstructured.Unstructured {
	if mm.mf == nil || mm.clusterID != id {
		return nil
	}
	return pick(mm.mf)
}

func (mm *matchedManifests) clusterDeployment(id string) *unstructured.Unstructured {
	return mm.forCluster(id, func(mf *Manifests) *unstructured.Unstructured { return mf.ClusterDeployment })
}

func (mm *matchedManifests) agentClusterInstall(id string) *unstructured.Unstructured {
	return mm.forCluster(id, func(mf *Manifests) *unstructured.Unstructured { return mf.AgentClusterInstall })
}

func (mm *matchedManifests) pullSecret(id string) *unstructured.Unstructured {
	return mm.forCluster(id, func(mf *Manifests) *unstructured.Unstructured { return mf.PullSecret })
}

func (mm *matchedManifests) cis(id string) *unstructured.Unstructured {
	return mm.forCluster(id, func(mf *Manifests) *unstructured.Unstructured { return mf.ClusterImageSet })
}

func (mm *matchedManifests) infraEnv(id string) *unstructured.Unstructured {
	if mm.mf == nil || mm.infraEnvID != id {
		return nil
	}
	return mm.mf.InfraEnv
}

func (mm *matchedManifests) nmStateSelector(infraEnvID string) m {
	ie := mm.infraEnv(infraEnvID)
	if ie == nil {
		return nil
	}
	return getMap(ie, "spec.nmStateConfigLabelSelector.matchLabels")
}

// nmStateConfig finds the manifest NMStateConfig with the same MAC addresses.
func (mm *matchedManifests) nmStateConfig(ifaces []macInterface) *unstructured.Unstructured {
	if mm.mf == nil {
		return nil
	}
	var want []string
	for _, i := range ifaces {
		want = append(want, strings.ToLower(i.MacAddress))
	}
	sort.Strings(want)
	for _, o := range mm.mf.NMStateConfigs {
		var have []string
		for _, i := range getSlice(o, "spec.interfaces") {
			if im, ok := i.(map[string]any); ok {
				mac, _ := im["macAddress"].(string)
				have = append(have, strings.ToLower(mac))
			}
		}
		sort.Strings(have)
		if !mm.used[o] && strings.Join(have, ",") == strings.Join(want, ",") {
			return o
		}
	}
	return nil
}
