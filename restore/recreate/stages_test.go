package recreate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/stages")

// controllerFields is what cluster 0's controllers compare between a CR and
// its row, what they do when the two differ, and where re-create takes the
// CR's value. Facts from openshift/assisted-service at commit
// 063b257950f726d6b291dc94b806bc243a1b56de (master, 2026-08), directory
// internal/controller/controllers:
//
//	CD   clusterdeployments_controller.go  Reconcile, updateIfNeeded, reconcileExistingCluster,
//	                                       installDay1, isReadyForInstallation, IsHoldInstallationSet
//	IE   infraenv_controller.go            updateInfraEnv, processNMStateConfig, InfraEnvConfig.ImageType
//	A    agent_controller.go               updateIfNeeded, updateInstallDisk, UpdateHostApprovedInternal
//	CRD  crd_utils.go                      CreateAgentCR (labels from the InfraEnv's agentLabels)
//	CL   internal/cluster/cluster.go       IsReadyForInstallation (status must be "ready")
//	IT   internal/infraenv/iso_image_type.go GetInfraEnvIsoImageType
//	ABI  cmd/agentbasedinstaller/client/main.go IMAGE_TYPE_ISO default full-iso
//
// "exported" is node 0's CR as the bundle holds it; "manifests" ABI's install
// manifest (openshift/installer pkg/asset/agent/manifests: infraenv.go,
// agentclusterinstall.go, common.go); "rows" the database column.
var controllerFields = []struct {
	kind, field string
	onMismatch  string // what the controller does when CR and row differ
	source      string // where re-create takes the value: exported > manifests > rows
	dbCanTell   bool   // false: no column holds it; node 0's object is the only source
}{
	{kindACI, "spec.holdInstallation", "CD reconcileExistingCluster: not held and the cluster ready (CL) -> installDay1 -> InstallClusterInternal starts the installation",
		"exported; else true for an un-installed day-1 cluster (setHold)", false},
	{kindCD, "metadata.annotations.hive.openshift.io/reconcile-pause", "CD IsHoldInstallationSet: true holds the installation like holdInstallation", "exported", false},
	{kindCD, "spec.platform.agentBareMetal.agentSelector", "none in assisted-service (hive's field)", "exported; else the InfraEnv label", false},
	{kindCD, "metadata.namespace", "CD Reconcile: GetClusterByKubeKey(namespace, name); no row -> createNewCluster registers a new cluster (new ID)", "rows' kube_key_namespace (mapped)", true},
	{kindInfraEnv, "spec.nmStateConfigLabelSelector", "IE processNMStateConfig lists NMStateConfigs by it; a different set -> new static_network_config, new ISO", "exported; else manifests; else the InfraEnv label", false},
	{kindInfraEnv, "spec.imageType", "IE updateInfraEnv: GetInfraEnvIsoImageType(spec) != type -> UpdateInfraEnvInternal (new ISO); empty means ISO_IMAGE_TYPE (minimal-iso), full-iso on s390x (IT)", "exported; else rows (ABI registers full-iso: ABI)", true},
	{kindInfraEnv, "spec.sshAuthorizedKey", "IE updateInfraEnv: compared as is, empty too -> update", "exported; else manifests; else rows", true},
	{kindInfraEnv, "spec.proxy", "IE updateInfraEnv: sent whenever set; the service compares proxy_hash", "exported; else rows", true},
	{kindInfraEnv, "spec.additionalNTPSources", "IE updateInfraEnv: sent when non-empty", "exported; else rows", true},
	{kindInfraEnv, "spec.cpuArchitecture", "IE: immutable after creation (webhook)", "exported; else rows", true},
	{kindAgent, "metadata.labels", "CRD CreateAgentCR adds the InfraEnv's agentLabels; agentSelector matching", "exported; else the InfraEnv label", false},
	{kindAgent, "spec.hostname", "A updateIfNeeded: set and != requested_hostname -> V2UpdateHostInternal (before installation only)", "exported; else requested_hostname (the suggested name stays unset)", true},
	{kindAgent, "spec.approved", "A updateIfNeeded: != approved -> UpdateHostApprovedInternal, at every stage", "exported; else rows", true},
	{kindAgent, "spec.role", "A updateIfNeeded: set and != role -> update (before installation only)", "exported; else rows", true},
	{kindAgent, "spec.installation_disk_id", "A updateInstallDisk: not the current disk by id, by-path or name -> update (before installation only)", "exported; else rows", true},
	{kindAgent, "spec.clusterDeploymentName", "A Reconcile: missing while the host is bound -> unbindHost (reclaim reboots an installed node)", "exported; else the row's cluster", true},
}

// stage is one install stage: the cluster's and the hosts' statuses.
type stage struct{ name, cluster, host string }

var stages = []stage{
	{"discovery", "pending-for-input", "known"},
	{"ready", "ready", "known"},
	{"installing", "installing", "installing-in-progress"},
	{"installed", "installed", "installed"},
}

// kubeRows is compactRows as a node 0 with an API left them: every row
// carries the kube keys of node 0's CRs in namespace cluster0, the infra-env
// its CR's name, and the InfraEnv controller's default image type.
func kubeRows(st stage) *Rows {
	rows := compactRows()
	c := rows.Clusters[0]
	c.Status, c.KubeKeyName, c.KubeKeyNamespace = st.cluster, "ocp", "cluster0"
	ie := rows.InfraEnvs[0]
	ie.Name, ie.KubeKeyNamespace, ie.Type = "ocp-is", "cluster0", DefaultISOImageType
	for _, h := range rows.Hosts {
		h.Status, h.KubeKeyNamespace, h.Approved = st.host, "cluster0", true
	}
	rows.Hosts[2].RequestedHostname = "" // only the inventory's (suggested) name
	return rows
}

// node0Export is what node 0's API held for kubeRows: the CRs as its
// controllers left them (agreeing with the rows), with the fields no column
// holds set the way a user or ACM sets them, plus status and server fields.
func node0Export(t *testing.T, rows *Rows, hold bool) []*unstructured.Unstructured {
	t.Helper()
	// The CRs that agree with the rows; the fields the rows cannot tell are
	// then set by hand below, as node 0's user had them.
	res, err := FromRows(rows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range res.Objects {
		o = o.DeepCopy()
		md := o.Object["metadata"].(map[string]any)
		md["uid"], md["resourceVersion"], md["creationTimestamp"] = "0ld-"+o.GetName(), "4242", "2026-03-01T12:00:00Z"
		md["finalizers"] = []any{"agent-install.openshift.io/ai-deprovision"}
		switch o.GetKind() {
		case kindCD:
			unstructured.RemoveNestedField(o.Object, "spec", "preserveOnDelete")
			set(o, "spec.platform.agentBareMetal.agentSelector", m{"matchLabels": m{"cluster-name": "ocp", "site": "edge-7"}})
			o.SetLabels(map[string]string{"cluster.open-cluster-management.io/clusterset": "edge"})
			set(o, "status.installedTimestamp", "2026-03-01T13:00:00Z")
		case kindACI:
			if hold {
				set(o, "spec.holdInstallation", true)
			}
			set(o, "status.debugInfo.state", rows.Clusters[0].Status)
		case kindInfraEnv:
			unstructured.RemoveNestedField(o.Object, "spec", "imageType") // the controller's default decided
			set(o, "spec.nmStateConfigLabelSelector", m{"matchLabels": m{"nmstate-for": "ocp-edge-7"}})
			set(o, "spec.agentLabels", m{"site": "edge-7"})
			set(o, "status.isoDownloadURL", "http://192.168.111.80:8888/images/x.iso")
		case kindNMState:
			o.SetLabels(map[string]string{"nmstate-for": "ocp-edge-7"})
		case kindAgent:
			l := o.GetLabels()
			l["site"] = "edge-7"
			o.SetLabels(l)
			o.SetAnnotations(map[string]string{"bmac.agent-install.openshift.io/hostname": "from-bmh"})
			set(o, "status.inventory.hostname", "inventory-name")
		}
		out = append(out, o)
	}
	return out
}

// wouldStartInstall is the ClusterDeployment controller's decision to start a
// day-1 installation: reconcileExistingCluster calls installDay1 unless the ACI
// is held (holdInstallation or the CD's reconcile-pause annotation), and
// installDay1 calls InstallClusterInternal only when IsReadyForInstallation,
// i.e. the cluster's status is "ready" (agent counts aside, which the
// restored rows keep).
func wouldStartInstall(c *Cluster, aci, cd *unstructured.Unstructured) bool {
	if c.Kind != "Cluster" || c.Status != "ready" {
		return false
	}
	if hold, _ := getBool(aci, "spec.holdInstallation"); hold {
		return false
	}
	return cd.GetAnnotations()["hive.openshift.io/reconcile-pause"] != "true"
}

func TestStagesFromExportedCRs(t *testing.T) {
	for _, st := range stages {
		for _, hold := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/hold=%v", st.name, hold), func(t *testing.T) {
				rows := kubeRows(st)
				export := node0Export(t, rows, hold)
				res, err := FromRows(rows, Options{Namespace: "restore-ns", Node0: export})
				if err != nil {
					t.Fatal(err)
				}
				// The controllers see nothing to update.
				if diffs, err := Diff(res.Objects, res.Rows); err != nil || len(diffs) != 0 {
					t.Fatalf("differences with the rows (%v): %v", err, diffs)
				}
				// Every object is node 0's, field for field, in node 0's namespace.
				if diffs := DiffNode0(res); len(diffs) != 0 {
					t.Fatalf("differences with node 0's CRs: %v", diffs)
				}
				for _, o := range res.Objects {
					if o.GetNamespace() != "" && o.GetNamespace() != "cluster0" {
						t.Errorf("%s %s moved to %s: the kube keys' namespace is kept", o.GetKind(), o.GetName(), o.GetNamespace())
					}
				}
				byKind := index(res.Objects)
				n0 := index(export)
				for _, f := range controllerFields {
					if f.field == "metadata.namespace" {
						continue
					}
					for name, got := range byKind[f.kind] {
						want := n0[f.kind][name]
						if want == nil {
							t.Errorf("%s %s: node 0 had no such object", f.kind, name)
							continue
						}
						if g, w := fieldOf(got, f.field), fieldOf(want, f.field); !reflect.DeepEqual(canon(g), canon(w)) {
							t.Errorf("%s %s %s = %v, node 0 had %v (controller: %s)", f.kind, name, f.field, g, w, f.onMismatch)
						}
					}
				}
				c := rows.Clusters[0]
				aci, cd := byKind[kindACI]["ocp"], byKind[kindCD]["ocp"]
				if got, node0 := wouldStartInstall(c, aci, cd), wouldStartInstall(c, n0[kindACI]["ocp"], n0[kindCD]["ocp"]); got != node0 {
					t.Errorf("cluster 0 would start the installation: %v, node 0: %v", got, node0)
				}
				if s := res.Objects[len(res.Objects)-1]; s.Object["status"] != nil || len(s.GetFinalizers()) > 0 || s.GetUID() != "" {
					t.Errorf("server fields survived: %v", s.Object["metadata"])
				}
				golden(t, filepath.Join("testdata", "stages", fmt.Sprintf("exported-%s-hold-%v.yaml", st.name, hold)), res.Objects)
			})
		}
	}
}

func TestStagesWithoutAnAPI(t *testing.T) {
	for _, st := range stages {
		for _, withManifests := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/manifests=%v", st.name, withManifests), func(t *testing.T) {
				rows := abiRows()
				rows.Clusters[0].Status = st.cluster
				for _, h := range rows.Hosts {
					h.Status = st.host
				}
				opts := Options{Namespace: "restore-ns"}
				if withManifests {
					mf, err := LoadManifests(abiManifests("192.168.111.5"))
					if err != nil {
						t.Fatal(err)
					}
					opts.Manifests = mf
				}
				res, err := FromRows(rows, opts)
				if err != nil {
					t.Fatal(err)
				}
				if diffs, err := Diff(res.Objects, res.Rows); err != nil || len(diffs) != 0 {
					t.Fatalf("differences with the rows (%v): %v", err, diffs)
				}
				byKind := index(res.Objects)
				aci, cd := byKind[kindACI]["ocp"], byKind[kindCD]["ocp"]
				// ABI's node 0 starts the installation itself; on cluster 0
				// nothing may (re)start it at any stage.
				if wouldStartInstall(&Cluster{Kind: "Cluster", Status: "ready"}, aci, cd) && st.cluster != "installed" {
					t.Errorf("the re-created ACI would let the controller start the installation once the cluster is ready")
				}
				hold, _ := getBool(aci, "spec.holdInstallation")
				if want := st.cluster != "installed"; hold != want {
					t.Errorf("holdInstallation = %v at %s, want %v", hold, st.name, want)
				}
				wantNS := "restore-ns"
				if withManifests {
					wantNS = "cluster0" // the manifests' namespace, node 0's
				}
				if cd.GetNamespace() != wantNS {
					t.Errorf("namespace %s, want %s", cd.GetNamespace(), wantNS)
				}
				diffs := DiffNode0(res)
				if !withManifests && len(diffs) != 0 {
					t.Errorf("no node-0 objects, yet differences: %v", diffs)
				}
				if withManifests {
					// The one field the restore adds that the manifests did not say.
					var fields []string
					for _, d := range diffs {
						fields = append(fields, d.Kind+" "+d.Field)
					}
					want := ""
					if hold {
						want = "AgentClusterInstall spec.holdInstallation"
					}
					if strings.Join(fields, ",") != want {
						t.Errorf("node-0 differences %v, want %q", diffs, want)
					}
				}
				golden(t, filepath.Join("testdata", "stages", fmt.Sprintf("rest-%s-manifests-%v.yaml", st.name, withManifests)), res.Objects)
			})
		}
	}
}

// TestNamespaceMappingMovesKubeKeys: only the mapping moves rows that carry
// kube keys, and --diff says so.
func TestNamespaceMappingMovesKubeKeys(t *testing.T) {
	rows := kubeRows(stages[2])
	res, err := FromRows(rows, Options{Namespace: "ignored", Node0: node0Export(t, rows, true), NamespaceMapping: map[string]string{"cluster0": "moved"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Keys.Clusters {
		if k.Namespace != "moved" {
			t.Errorf("cluster key %+v", k)
		}
	}
	for _, o := range res.Objects {
		if ns := o.GetNamespace(); ns != "" && ns != "moved" {
			t.Errorf("%s %s in %s", o.GetKind(), o.GetName(), ns)
		}
	}
	if diffs, _ := Diff(res.Objects, res.Rows); len(diffs) != 0 {
		t.Fatalf("differences with the rows: %v", diffs)
	}
	var moved, refs int
	for _, d := range DiffNode0(res) {
		switch {
		case d.Field == "metadata.namespace" && d.Object == "moved" && d.Node0 == "cluster0":
			moved++
		case strings.HasSuffix(d.Field, ".namespace") && d.Object == "moved":
			refs++
		default:
			t.Errorf("unexpected difference: %s", d)
		}
	}
	if moved != len(res.Objects)-1 || refs == 0 { // the ClusterImageSet has no namespace
		t.Errorf("%d moved objects of %d, %d moved references", moved, len(res.Objects), refs)
	}
}

// TestDiffNode0ListsAHandChange: a row changed by hand after node 0 exported
// its CRs shows against the database, and a CR field changed by hand against
// node 0.
func TestDiffNode0ListsAHandChange(t *testing.T) {
	rows := kubeRows(stages[1])
	export := node0Export(t, rows, true)
	rows.Hosts[0].RequestedHostname = "renamed-by-hand"
	res, err := FromRows(rows, Options{Node0: export})
	if err != nil {
		t.Fatal(err)
	}
	diffs, _ := Diff(res.Objects, res.Rows)
	if len(diffs) != 1 || diffs[0].Field != "spec.hostname" || diffs[0].Database != "renamed-by-hand" || diffs[0].Against != AgainstDatabase {
		t.Fatalf("database differences %v", diffs)
	}
	// A manifest changed by hand, the rows preferred: the re-created InfraEnv
	// takes the row's key and --diff lists the field against the manifest.
	mf, err := LoadManifests(abiManifests("192.168.111.5"))
	if err != nil {
		t.Fatal(err)
	}
	set(mf.InfraEnv, "spec.sshAuthorizedKey", "ssh-ed25519 AAAA-typed-by-hand")
	res, err = FromRows(abiRows(), Options{Manifests: mf, PreferDatabase: true})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range DiffNode0(res) {
		if d.Kind == kindInfraEnv && d.Field == "spec.sshAuthorizedKey" && d.Against == AgainstManifests && d.Node0 == "ssh-ed25519 AAAA-typed-by-hand" {
			found = true
		}
	}
	if !found {
		t.Errorf("the hand-changed manifest field is not listed: %v", DiffNode0(res))
	}
}

func index(objs []*unstructured.Unstructured) map[string]map[string]*unstructured.Unstructured {
	out := map[string]map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if out[o.GetKind()] == nil {
			out[o.GetKind()] = map[string]*unstructured.Unstructured{}
		}
		out[o.GetKind()][o.GetName()] = o
	}
	return out
}

// fieldOf reads a dotted path whose last key may itself hold dots (an
// annotation or label name).
func fieldOf(o *unstructured.Unstructured, path string) any {
	for _, prefix := range []string{"metadata.annotations.", "metadata.labels."} {
		if strings.HasPrefix(path, prefix) {
			mm := getMap(o, strings.TrimSuffix(prefix, "."))
			return mm[strings.TrimPrefix(path, prefix)]
		}
	}
	return get(o, path)
}

// golden compares objs with the YAML in path (go test -update rewrites it).
func golden(t *testing.T, path string, objs []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	got := strings.Join(docs, "---\n")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the re-created objects (go test -update rewrites it after review)\ngot:\n%s", path, got)
	}
}

// TestRerunAfterMappingKeepsNode0CRs: a rerun reads rows whose kube keys the
// first run moved; it still finds node 0's CRs and builds the same objects.
func TestRerunAfterMappingKeepsNode0CRs(t *testing.T) {
	rows := kubeRows(stages[1])
	export := node0Export(t, rows, true)
	opts := Options{Node0: export, NamespaceMapping: map[string]string{"cluster0": "moved"}}
	first, err := FromRows(rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FromRows(first.Rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Objects) != len(again.Objects) {
		t.Fatalf("%d objects, then %d", len(first.Objects), len(again.Objects))
	}
	for i := range first.Objects {
		if !reflect.DeepEqual(first.Objects[i].Object, again.Objects[i].Object) {
			t.Errorf("rerun changed %s %s:\n%v\n%v", first.Objects[i].GetKind(), first.Objects[i].GetName(), first.Objects[i].Object, again.Objects[i].Object)
		}
	}
	if hold, _ := getBool(index(again.Objects)[kindACI]["ocp"], "spec.holdInstallation"); !hold {
		t.Error("the rerun lost node 0's hold")
	}
}

// TestDiffNode0RedactsSecrets: a pull secret that differs from node 0's
// manifest is listed without either value.
func TestDiffNode0RedactsSecrets(t *testing.T) {
	mf, err := LoadManifests(abiManifests("192.168.111.5"))
	if err != nil {
		t.Fatal(err)
	}
	rows := abiRows()
	rows.Clusters[0].PullSecret = `{"auths":{"other.example.com":{"auth":"b3RoZXI6c2VjcmV0"}}}`
	res, err := FromRows(rows, Options{Manifests: mf, PreferDatabase: true})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range DiffNode0(res) {
		s := fmt.Sprint(d.Object, d.Node0, d.String())
		if strings.Contains(s, "b3RoZXI6c2VjcmV0") || strings.Contains(s, "c2VjcmV0LXVzZXI") {
			t.Fatalf("a pull secret leaked: %s", d)
		}
		if d.Kind == kindSecret && d.Field == "data..dockerconfigjson" && d.Object == Redacted && d.Node0 == Redacted {
			found = true
		}
	}
	if !found {
		t.Errorf("the changed pull secret is not listed: %v", DiffNode0(res))
	}
}
