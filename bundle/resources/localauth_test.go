package resources

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
)

func secret(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "dg=="}}}
}

func TestClusterSource_LocalAuthSecret(t *testing.T) {
	ctx := context.Background()
	client := func(objs ...runtime.Object) *dynfake.FakeDynamicClient {
		return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			gvrSecret: "SecretList", gvrConfigMap: "ConfigMapList", gvrNamespace: "NamespaceList", gvrClusterImageSet: "ClusterImageSetList",
			{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"}:                   "ClusterDeploymentList",
			{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"}: "AgentClusterInstallList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "nmstateconfigs"}:         "NMStateConfigList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"}:              "InfraEnvList",
			{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}:                         "BareMetalHostList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"}:                 "AgentList",
			{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentclassifications"}:   "AgentClassificationList",
		}, objs...)
	}
	has := func(objs []*unstructured.Unstructured) string {
		for _, o := range objs {
			if o.GetName() == LocalAuthSecretName {
				return o.GetNamespace()
			}
		}
		return ""
	}
	c := client(secret("mce", LocalAuthSecretName), secret("mce", "other"))
	for _, tc := range []struct {
		src  ClusterSource
		want string
	}{
		{ClusterSource{Client: c}, ""}, // not asked for (unencrypted layer)
		{ClusterSource{Client: c, LocalAuth: true}, "mce"},
		{ClusterSource{Client: c, LocalAuth: true, LocalAuthNamespace: "mce"}, "mce"},
	} {
		objs, err := tc.src.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := has(objs); got != tc.want {
			t.Errorf("LocalAuth=%v ns=%q: local-auth Secret from %q, want %q", tc.src.LocalAuth, tc.src.LocalAuthNamespace, got, tc.want)
		}
	}
	two := client(secret("a", LocalAuthSecretName), secret("b", LocalAuthSecretName))
	if _, err := (&ClusterSource{Client: two, LocalAuth: true}).Collect(ctx); err == nil || !strings.Contains(err.Error(), "--local-auth-namespace") {
		t.Errorf("two services: err = %v", err)
	}
	if _, err := (&ClusterSource{Client: c, LocalAuth: true, LocalAuthNamespace: "absent"}).Collect(ctx); err == nil {
		t.Error("a named namespace without the Secret must fail")
	}
}

// A REST-mode node 0's key from its env file: after the manifests (which
// stay byte for byte), or as a layer of its own (From local-auth); Decode
// gives it back as the v1 Secret the restore takes out of the objects.
func TestLocalAuthInLayer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	manifest := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull-secret\n  namespace: cluster0\n"
	if err := os.WriteFile(filepath.Join(dir, "pull-secret.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	key := LocalAuthSecret([]byte("-----BEGIN EC PRIVATE KEY-----\n"), []byte("-----BEGIN EC PUBLIC KEY-----\n"))

	var buf bytes.Buffer
	sum, err := (&DirSource{Dir: dir, LocalAuth: key}).Write(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if sum.From != FromManifestsName || sum.Objects != 2 || sum.Kinds["Secret"] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	names := tarNames(t, buf.Bytes())
	if len(names) != 2 || names[0] != "manifests/pull-secret.yaml" || names[1] != "cluster/00000-_cluster/Secret/"+LocalAuthSecretName+".json" {
		t.Fatalf("entries %v", names)
	}
	objs, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil || len(objs) != 2 || objs[1].GetName() != LocalAuthSecretName || objs[1].GetKind() != "Secret" {
		t.Fatalf("decoded %d objects (%v)", len(objs), err)
	}
	if d, _, _ := unstructured.NestedString(objs[1].Object, "data", "ec-private-key.pem"); d == "" {
		t.Fatal("the Secret lost its private key")
	}

	buf.Reset()
	if sum, err = (&LocalAuthSource{Secret: key}).Write(ctx, &buf); err != nil || sum.From != FromLocalAuthName || sum.Objects != 1 {
		t.Fatalf("key-only layer: %+v, %v", sum, err)
	}
	if objs, err = Decode(bytes.NewReader(buf.Bytes())); err != nil || len(objs) != 1 || objs[0].GetName() != LocalAuthSecretName {
		t.Fatalf("key-only layer decoded %d (%v)", len(objs), err)
	}

	// Anything else is refused before a byte is written.
	bad := secret("", "other")
	buf.Reset()
	if _, err := (&LocalAuthSource{Secret: bad}).Write(ctx, &buf); err == nil || buf.Len() != 0 {
		t.Fatalf("another Secret as the key: err %v, %d bytes", err, buf.Len())
	}
	if _, err := (&DirSource{Dir: dir, LocalAuth: bad}).Write(ctx, io.Discard); err == nil {
		t.Fatal("DirSource took another Secret as the key")
	}
}

func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
}
