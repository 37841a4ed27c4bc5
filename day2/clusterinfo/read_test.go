package clusterinfo

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func u(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

func fakes(t *testing.T) (*fake.Clientset, *dynfake.FakeDynamicClient) {
	kube := fake.NewSimpleClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull-secret", Namespace: "openshift-config"}, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m0", Labels: map[string]string{"node-role.kubernetes.io/master": ""}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{Architecture: "arm64"}, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}}}},
	)
	scheme := runtime.NewScheme()
	lists := map[schema.GroupVersionResource]string{ClusterVersions: "ClusterVersionList", Infrastructures: "InfrastructureList", Proxies: "ProxyList",
		IDMSs: "ImageDigestMirrorSetList", ICSPs: "ImageContentSourcePolicyList", MachineConfigs: "MachineConfigList"}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, lists,
		u("config.openshift.io/v1", "ClusterVersion", "version", map[string]any{"spec": map[string]any{"clusterID": "cid"},
			"status": map[string]any{"history": []any{map[string]any{"image": "quay.io/r@sha256:1", "version": "4.18.1"}}, "desired": map[string]any{"architecture": "Multi"}}}),
		u("config.openshift.io/v1", "Infrastructure", "cluster", map[string]any{"spec": map[string]any{"platformSpec": map[string]any{"type": "None"}},
			"status": map[string]any{"apiServerURL": "https://api.c1.example.com:6443"}}),
		u("config.openshift.io/v1", "ImageDigestMirrorSet", "a", map[string]any{"spec": map[string]any{"imageDigestMirrors": []any{map[string]any{"source": "quay.io/r", "mirrors": []any{"m1/r"}}}}}),
		u("operator.openshift.io/v1alpha1", "ImageContentSourcePolicy", "b", map[string]any{"spec": map[string]any{"repositoryDigestMirrors": []any{map[string]any{"source": "quay.io/r", "mirrors": []any{"m2/r", "m1/r"}}}}}),
		u("machineconfiguration.openshift.io/v1", "MachineConfig", "99-worker-fips", map[string]any{"spec": map[string]any{"fips": true}}),
	)
	return kube, dyn
}

func TestRead(t *testing.T) {
	kube, dyn := fakes(t)
	// The user may not read MachineConfigs: FIPS and SSH degrade with warnings.
	dyn.PrependReactor("get", "machineconfigs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigs"}, "x", errors.New("no"))
	})
	in, err := (&Reader{Kube: kube, Dynamic: dyn}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if in.ClusterID != "cid" || in.ClusterName != "c1" || in.BaseDomain != "example.com" || in.Platform != "none" || in.Architecture != "aarch64" || !in.MultiArch || in.Version != "4.18.1" {
		t.Fatalf("info = %+v", in)
	}
	if len(in.ImageDigestSources) != 1 || strings.Join(in.ImageDigestSources[0].Mirrors, ",") != "m1/r,m2/r" {
		t.Fatalf("mirrors = %+v", in.ImageDigestSources)
	}
	w := strings.Join(in.Warnings, "\n")
	if !strings.Contains(w, `cannot read MachineConfig "99-worker-fips" (forbidden): FIPS mode cannot be detected`) || in.FIPS {
		t.Fatalf("warnings = %s (fips %v)", w, in.FIPS)
	}
	if !in.UserManagedNetworking() {
		t.Fatal("platform none must be user-managed networking")
	}
}

func TestRead_RequiredForbiddenNamesTheGrant(t *testing.T) {
	kube, dyn := fakes(t)
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	})
	_, err := (&Reader{Kube: kube, Dynamic: dyn}).Read(context.Background())
	if !errors.Is(err, ErrRequired) || !strings.Contains(err.Error(), "cannot read Nodes: forbidden: grant list on nodes") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidatePlatform(t *testing.T) {
	for _, tt := range []struct {
		platform, arch, want string
	}{
		{"baremetal", "x86_64", ""},
		{"aws", "x86_64", `platform "aws" is not supported for adding nodes: supported platforms are baremetal, vsphere, nutanix, none, external`},
		{"baremetal", "s390x", `platform "baremetal" is not supported on s390x: only platform none is`},
		{"none", "s390x", ""},
	} {
		err := (&Info{Platform: tt.platform, Architecture: tt.arch}).ValidatePlatform()
		if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
			t.Errorf("%s/%s: err = %v, want %q", tt.platform, tt.arch, err, tt.want)
		}
	}
}

func TestDecodeDataURL(t *testing.T) {
	for in, want := range map[string]string{"data:,a%20b": "a b", "data:text/plain;charset=utf-8;base64,aGk=": "hi"} {
		if got, err := DecodeDataURL(in); err != nil || string(got) != want {
			t.Errorf("%s: %q %v", in, got, err)
		}
	}
	if _, err := DecodeDataURL("https://x"); err == nil {
		t.Error("non-data URL accepted")
	}
}

// BenchmarkDecodeDataURL decodes a chrony.conf as MachineConfigs carry it.
func BenchmarkDecodeDataURL(b *testing.B) {
	u := "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("server 0.pool.ntp.org iburst\n", 20)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeDataURL(u); err != nil {
			b.Fatal(err)
		}
	}
}
