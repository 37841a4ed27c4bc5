package synthetic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Node is an existing node of the seeded cluster.
type Node struct {
	Name   string
	IP     string
	Master bool
}

// Mirror is one IDMS entry.
type Mirror struct {
	Source  string
	Mirrors []string
}

// ClusterOptions describe the OpenShift objects to seed.
type ClusterOptions struct {
	ClusterID    string
	ReleaseImage string
	Version      string
	// Arch is the Kubernetes architecture of the nodes (amd64, s390x, ...).
	Arch string
	// Platform is the Infrastructure platform type (BareMetal, None, AWS...).
	Platform   string
	APIURL     string
	PullSecret string
	CABundle   string
	Proxy      map[string]any
	Mirrors    []Mirror
	SSHKey     string
	FIPS       bool
	Chrony     string
	MCSURL     string
	MCSCA      string
	Nodes      []Node
}

var (
	gvrCV    = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	gvrInfra = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "infrastructures"}
	gvrProxy = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "proxies"}
	gvrIDMS  = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagedigestmirrorsets"}
	gvrMC    = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	gvrNode  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	gvrNS    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrCM    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrSec   = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// SeedCluster creates (or replaces) the objects an installed cluster has and
// removes them when t ends (namespaces stay: nothing deletes them here).
func SeedCluster(t testing.TB, k *harness.Kube, o ClusterOptions) {
	t.Helper()
	ctx := context.Background()
	dc := k.Dynamic(t)
	for _, ns := range []string{"openshift-config", "openshift-machine-config-operator", "openshift-machine-api"} {
		_, err := dc.Resource(gvrNS).Create(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	type item struct {
		gvr    schema.GroupVersionResource
		ns     string
		o      map[string]any
		status map[string]any
	}
	items := []item{
		{gvrCV, "", map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": map[string]any{"name": "version"},
			"spec": map[string]any{"clusterID": o.ClusterID, "channel": "stable-4.17"}},
			map[string]any{
				"desired":            map[string]any{"image": o.ReleaseImage, "version": o.Version},
				"history":            []any{map[string]any{"image": o.ReleaseImage, "version": o.Version, "state": "Completed", "verified": false, "startedTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T01:00:00Z"}},
				"observedGeneration": int64(1), "versionHash": "abc", "availableUpdates": nil,
			}},
		{gvrInfra, "", map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": map[string]any{"name": "cluster"},
			"spec": map[string]any{"platformSpec": map[string]any{"type": o.Platform}}},
			map[string]any{"apiServerURL": o.APIURL, "apiServerInternalURI": o.APIURL, "infrastructureName": "kat-x", "platform": o.Platform,
				"platformStatus": map[string]any{"type": o.Platform}, "controlPlaneTopology": "HighlyAvailable", "infrastructureTopology": "HighlyAvailable"}},
		{gvrSec, "openshift-config", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "pull-secret", "namespace": "openshift-config"},
			"type": "kubernetes.io/dockerconfigjson", "data": map[string]any{".dockerconfigjson": b64(o.PullSecret)}}, nil},
		{gvrCM, "openshift-machine-config-operator", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "coreos-bootimages", "namespace": "openshift-machine-config-operator"},
			"data": map[string]any{"stream": streamJSON(o.Arch)}}, nil},
	}
	if o.Proxy != nil {
		items = append(items, item{gvrProxy, "", map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": map[string]any{"name": "cluster"}, "spec": o.Proxy}, nil})
	}
	if o.CABundle != "" {
		items = append(items, item{gvrCM, "openshift-config", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "user-ca-bundle", "namespace": "openshift-config"},
			"data": map[string]any{"ca-bundle.crt": o.CABundle}}, nil})
	}
	if len(o.Mirrors) > 0 {
		var list []any
		for _, m := range o.Mirrors {
			var ms []any
			for _, x := range m.Mirrors {
				ms = append(ms, x)
			}
			list = append(list, map[string]any{"source": m.Source, "mirrors": ms})
		}
		items = append(items, item{gvrIDMS, "", map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": map[string]any{"name": "kat-mirrors"},
			"spec": map[string]any{"imageDigestMirrors": list}}, nil})
	}
	if o.SSHKey != "" {
		items = append(items, item{gvrMC, "", mc("99-worker-ssh", map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"},
			"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{o.SSHKey}}}}}}), nil})
	}
	items = append(items, item{gvrMC, "", mc("99-worker-fips", map[string]any{"fips": o.FIPS, "config": map[string]any{"ignition": map[string]any{"version": "3.2.0"}}}), nil})
	if o.Chrony != "" {
		items = append(items, item{gvrMC, "", mc("50-workers-chrony-configuration", map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.2.0"},
			"storage": map[string]any{"files": []any{map[string]any{"path": "/etc/chrony.conf", "mode": int64(420), "overwrite": true,
				"contents": map[string]any{"source": "data:text/plain;charset=utf-8;base64," + b64(o.Chrony)}}}}}}), nil})
	}
	if o.MCSURL != "" {
		ud, _ := json.Marshal(map[string]any{"ignition": map[string]any{"version": "3.2.0",
			"config":   map[string]any{"merge": []any{map[string]any{"source": o.MCSURL}}},
			"security": map[string]any{"tls": map[string]any{"certificateAuthorities": []any{map[string]any{"source": "data:text/plain;charset=utf-8;base64," + b64(o.MCSCA)}}}}}})
		items = append(items, item{gvrSec, "openshift-machine-api", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "worker-user-data-managed", "namespace": "openshift-machine-api"},
			"data": map[string]any{"userData": b64(string(ud))}}, nil})
	}
	for _, n := range o.Nodes {
		labels := map[string]any{"kubernetes.io/arch": o.Arch, "kubernetes.io/hostname": n.Name, "node-role.kubernetes.io/worker": ""}
		if n.Master {
			labels = map[string]any{"kubernetes.io/arch": o.Arch, "kubernetes.io/hostname": n.Name, "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}
		}
		items = append(items, item{gvrNode, "", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": n.Name, "labels": labels}},
			map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": n.IP}, map[string]any{"type": "Hostname", "address": n.Name}},
				"nodeInfo": map[string]any{"architecture": o.Arch, "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "5.14", "osImage": "RHCOS",
					"containerRuntimeVersion": "cri-o://1.30", "kubeletVersion": "v1.30.0", "kubeProxyVersion": "v1.30.0", "operatingSystem": "linux"}}})
	}
	for _, it := range items {
		ri := resource(dc, it.gvr, it.ns)
		u := obj(it.o)
		name := u.GetName()
		_ = ri.Delete(ctx, name, metav1.DeleteOptions{})
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", it.gvr.Resource, name, err)
		}
		if it.status != nil {
			// On a cluster with a controller-manager, its node controller
			// writes a new Node too: retry on the latest version.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := ri.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Object["status"] = it.status
				_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatalf("status of %s %s: %v", it.gvr.Resource, name, err)
			}
		}
		t.Cleanup(func() { _ = ri.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// A token left by an earlier test must not leak into this one.
	_ = resource(dc, gvrSec, "openshift-config").Delete(ctx, "agent-auth-token", metav1.DeleteOptions{})
	t.Cleanup(func() {
		_ = resource(dc, gvrSec, "openshift-config").Delete(context.Background(), "agent-auth-token", metav1.DeleteOptions{})
	})
}

func resource(dc dynamic.Interface, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return dc.Resource(gvr)
	}
	return dc.Resource(gvr).Namespace(ns)
}

func mc(name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}, "spec": spec}
}

func obj(m map[string]any) *unstructured.Unstructured {
	b, _ := json.Marshal(m) // normalize numbers and nested types
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return &unstructured.Unstructured{Object: out}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func streamJSON(arch string) string {
	rpm := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
	if rpm == "" {
		rpm = arch
	}
	s, _ := json.Marshal(map[string]any{"stream": "rhcos-4.17", "architectures": map[string]any{rpm: map[string]any{"artifacts": map[string]any{"metal": map[string]any{
		"release": "417.94.202410090854-0",
		"formats": map[string]any{"iso": map[string]any{"disk": map[string]any{
			"location": "https://rhcos.mirror.openshift.com/art/storage/prod/streams/4.17/builds/417.94.202410090854-0/" + rpm + "/rhcos-417.94.202410090854-0-live." + rpm + ".iso",
			"sha256":   "0000000000000000000000000000000000000000000000000000000000000000"}}}}}}}})
	return string(s)
}
