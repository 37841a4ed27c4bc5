package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// inspection is the part of `bundle inspect -o json` the demo reads.
type inspection struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	Layers []struct {
		Kind      string `json:"kind"`
		Size      int64  `json:"size"`
		Encrypted bool   `json:"encrypted"`
	} `json:"layers"`
	Metadata struct {
		Database *struct {
			Tables []struct {
				Name string `json:"name"`
				Rows int64  `json:"rows"`
			} `json:"tables"`
		} `json:"database"`
		Files *struct {
			Files int64 `json:"files"`
			Bytes int64 `json:"bytes"`
		} `json:"files"`
		Resources *struct {
			Objects int `json:"objects"`
		} `json:"resources"`
	} `json:"metadata"`
}

// restoredKinds are the objects the restore puts on cluster 0, in the
// restore's order.
var restoredKinds = []struct {
	kind       string
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	{"ClusterImageSet", schema.GroupVersionResource{Group: "hive.openshift.io", Version: "v1", Resource: "clusterimagesets"}, false},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
	{"ConfigMap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	{"ClusterDeployment", schema.GroupVersionResource{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"}, true},
	{"AgentClusterInstall", schema.GroupVersionResource{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"}, true},
	{"NMStateConfig", schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "nmstateconfigs"}, true},
	{"InfraEnv", schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"}, true},
	{"Agent", schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"}, true},
}

// show is step 4: the bundle, the objects on cluster 0, the receipt, and the
// rows and files on both sides compared.
func (d *demo) show(s *stepRun) error {
	ref := d.refAt(d.migration.Digest)
	res, err := d.assisted(s, append([]string{"bundle", "inspect", ref}, d.registryArgs()...)...)
	if err != nil {
		return err
	}
	s.block(res.Stdout)
	res, err = d.assistedNote(s, "read for the summary", append(append([]string{"bundle", "inspect", ref}, d.registryArgs()...), "-o", "json")...)
	if err != nil {
		return err
	}
	var in inspection
	if err := json.Unmarshal([]byte(res.Stdout), &in); err != nil {
		return fmt.Errorf("bundle inspect -o json: %w", err)
	}
	d.sum.setBundle(ref, &in)

	out, err := d.kubectl(s, "get", "clusterimagesets,clusterdeployments,agentclusterinstalls,nmstateconfigs,infraenvs,agents", "-A")
	if err != nil {
		return err
	}
	s.block(out)
	if err := d.countObjects(); err != nil {
		return err
	}

	res, err = d.assisted(s, "wait-for", "restore-complete", "--bundle", d.migration.Digest, "-n", serviceNamespace, "--kubeconfig", d.kubeconfig, "--timeout", "1m")
	if err != nil {
		return err
	}
	s.block(res.Stdout + res.Stderr)
	d.sum.Receipt = true
	out, err = d.kubectl(s, "get", "configmaps", "-n", serviceNamespace, "-l", "kubectl-assisted.io/role=restore-receipt",
		"-o", "custom-columns=RECEIPT:.metadata.name,PHASES:.data.phases,COMPLETED:.data.completedAt")
	if err != nil {
		return err
	}
	s.block(out)

	out, err = d.kubectl(s, "get", "configmap", "-n", controllerNamespace, "assisted-installer-controller-config", "-o", "jsonpath={.data.inventory-url}")
	if err != nil {
		return err
	}
	s.say("the assisted-installer-controller now reports to %s (was %s)", out, node0ServiceURL)
	d.sum.ControllerURL = out
	if out != serviceURL {
		return fmt.Errorf("the assisted-installer-controller still reports to %s, want %s", out, serviceURL)
	}

	if err := d.compareRows(s, &in); err != nil {
		return err
	}
	return d.compareFiles(s)
}

// countObjects counts what the restore created on cluster 0 (it started
// empty: every object there came from the bundle).
func (d *demo) countObjects() error {
	dc := d.kube.Dynamic(d.r)
	d.sum.Objects.Restored = map[string]int{}
	for _, k := range restoredKinds {
		ri := dc.Resource(k.gvr)
		var n int
		if k.namespaced {
			list, err := ri.Namespace(clusterNamespace).List(d.ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("list %s: %w", k.gvr.Resource, err)
			}
			for _, o := range list.Items {
				// The API server makes kube-root-ca.crt in every namespace.
				if k.kind == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
					continue
				}
				n++
			}
		} else {
			list, err := ri.List(d.ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("list %s: %w", k.gvr.Resource, err)
			}
			n = len(list.Items)
		}
		if n > 0 {
			d.sum.Objects.Restored[k.kind] = n
			d.sum.Objects.Total += n
		}
	}
	return nil
}

// compareRows counts every table on both sides; tables the bundle leaves out
// by design (the release image cache) are shown as such.
func (d *demo) compareRows(s *stepRun, in *inspection) error {
	src := d.node0Counts // node 0 has rebooted (-at-reboot): counted before
	if src == nil {
		var err error
		if src, err = tableCounts(d.ctx, d.node0DB); err != nil {
			return fmt.Errorf("count node 0 rows: %w", err)
		}
	}
	dst, err := tableCounts(d.ctx, d.cluster0DB)
	if err != nil {
		return fmt.Errorf("count cluster 0 rows: %w", err)
	}
	// The bundle's own row counts say which tables' rows it carries: a
	// table it lists with no rows while node 0 has some is left out on
	// purpose (--db-exclude-table-data, release_images by default).
	inBundle := map[string]int64{}
	listed := map[string]bool{}
	if in.Metadata.Database != nil {
		for _, t := range in.Metadata.Database.Tables {
			inBundle[t.Name], listed[t.Name] = t.Rows, true
		}
	}
	d.sum.Database = DatabaseResult{Compared: true}
	names := make([]string, 0, len(src))
	for t := range src {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %8s %8s %10s\n", "TABLE", "NODE 0", "BUNDLE", "CLUSTER 0")
	db := &d.sum.Database
	var differ []string
	for _, t := range names {
		tc := TableCount{Name: t, Node0: src[t], InBundle: inBundle[t], Cluster0: dst[t],
			Bundled: listed[t] && (inBundle[t] > 0 || src[t] == 0)}
		db.Tables = append(db.Tables, tc)
		db.RowsSeeded += tc.Node0
		mark := ""
		switch {
		case !tc.Bundled:
			mark = "  rows left out: a cache the service reloads"
		case tc.Node0 != tc.Cluster0 || tc.InBundle != tc.Node0:
			mark = "  DIFFERS"
			differ = append(differ, t)
		}
		if tc.Bundled {
			db.RowsSeededBundled += tc.Node0
			db.RowsRestored += tc.Cluster0
		}
		fmt.Fprintf(&b, "%-22s %8d %8d %10d%s\n", t, tc.Node0, tc.InBundle, tc.Cluster0, mark)
	}
	fmt.Fprintf(&b, "%-22s %8d %8s %10d", "total moved", db.RowsSeededBundled, "", db.RowsRestored)
	s.say("rows, counted on both servers (BUNDLE: the bundle's own count):")
	s.block(b.String())
	if len(differ) > 0 {
		return fmt.Errorf("rows differ between node 0 and cluster 0 in %s", strings.Join(differ, ", "))
	}
	return nil
}

// compareFiles compares node 0's file storage (without the rebuildable
// installer cache) with cluster 0's, byte for byte, and the manifest-source
// xattrs.
func (d *demo) compareFiles(s *stepRun) error {
	skip := map[string]bool{"installercache": true}
	src, err := countFiles(d.node0.dataDir, skip)
	if err != nil {
		return err
	}
	dstDir := d.cluster0Data
	dst, err := countFiles(dstDir, nil)
	if err != nil {
		return err
	}
	f := &d.sum.Files
	f.Compared = true
	f.Node0Files, f.Node0Bytes, f.Node0Xattrs = src.files, src.bytes, src.xattrs
	f.Cluster0Files, f.Cluster0Bytes, f.Cluster0Xattrs = dst.files, dst.bytes, dst.xattrs
	same, err := sameFiles(d.node0.dataDir, dstDir, skip)
	if err != nil {
		return err
	}
	f.Identical = same
	s.say("files: node 0 %d (%s, %d with the source xattr), cluster 0 %d (%s, %d with the xattr), %d identical byte for byte",
		src.files, humanBytes(src.bytes), src.xattrs, dst.files, humanBytes(dst.bytes), dst.xattrs, same)
	if int64(same) != src.files || dst.xattrs != src.xattrs {
		return fmt.Errorf("cluster 0's file storage differs from node 0's")
	}
	return nil
}

// sameFiles counts the regular files of a that b holds with the same bytes.
func sameFiles(a, b string, skip map[string]bool) (int, error) {
	n := 0
	err := filepath.WalkDir(a, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		if de.IsDir() && skip[rel] {
			return filepath.SkipDir
		}
		if !de.Type().IsRegular() {
			return nil
		}
		x, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err == nil && bytes.Equal(x, y) {
			n++
		}
		return nil
	})
	return n, err
}
