package recreate

import (
	"strings"
	"testing"
	"testing/fstest"
)

// abiManifests are node 0's files for compactRows' cluster, as the agent
// installer writes them (names from the cluster, no platform on the CD).
func abiManifests(apiVIP string) fstest.MapFS {
	return fstest.MapFS{
		"cluster-deployment.yaml": {Data: []byte(`apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata:
  name: ocp
  namespace: cluster0
  creationTimestamp: null
spec:
  baseDomain: example.com
  clusterInstallRef:
    group: extensions.hive.openshift.io
    kind: AgentClusterInstall
    name: ocp
    version: v1beta1
  clusterName: ocp
  controlPlaneConfig:
    servingCertificates: {}
  pullSecretRef:
    name: ocp-pull-secret
status: {}
`)},
		"agent-cluster-install.yaml": {Data: []byte(`apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: ocp
  namespace: cluster0
spec:
  apiVIP: ` + apiVIP + `
  apiVIPs:
  - ` + apiVIP + `
  clusterDeploymentRef:
    name: ocp
  imageSetRef:
    name: openshift-4.16.3
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    serviceNetwork:
    - 172.30.0.0/16
    networkType: OVNKubernetes
  provisionRequirements:
    controlPlaneAgents: 3
  platformType: BareMetal
`)},
		"pull-secret.yaml": {Data: []byte(`apiVersion: v1
kind: Secret
type: kubernetes.io/dockerconfigjson
metadata:
  name: ocp-pull-secret
  namespace: cluster0
stringData:
  .dockerconfigjson: '` + testPullSecret + `'
`)},
		"cluster-image-set.yaml": {Data: []byte(`apiVersion: hive.openshift.io/v1
kind: ClusterImageSet
metadata:
  name: openshift-4.16.3
spec:
  releaseImage: quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64
`)},
		"infraenv.yaml": {Data: []byte(`apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata:
  name: ocp
  namespace: cluster0
spec:
  clusterRef:
    name: ocp
    namespace: cluster0
  nmStateConfigLabelSelector:
    matchLabels:
      infraenvs.agent-install.openshift.io: ocp
  pullSecretRef:
    name: ocp-pull-secret
`)},
		"nmstateconfig.yaml": {Data: []byte(`apiVersion: agent-install.openshift.io/v1beta1
kind: NMStateConfig
metadata:
  name: master-0
  namespace: cluster0
  labels:
    infraenvs.agent-install.openshift.io: ocp
spec:
  config:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      mac-address: 52:54:01:aa:bb:01
      ipv4:
        enabled: true
        dhcp: false
        address:
        - ip: 192.168.111.20
          prefix-length: 24
    dns-resolver:
      config:
        server:
        - 192.168.111.1
  interfaces:
  - name: eth0
    macAddress: 52:54:01:aa:bb:01
`)},
		"unrelated.yaml": {Data: []byte("not: read\n")},
	}
}

// abiRows are compactRows as ABI registered them: the infra-env has the
// manifest's name.
func abiRows() *Rows {
	rows := compactRows()
	rows.InfraEnvs[0].Name = "ocp"
	return rows
}

func TestManifestsOverlay(t *testing.T) {
	mf, err := LoadManifests(abiManifests("192.168.111.5"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := FromRows(abiRows(), Options{Manifests: mf})
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := Diff(res.Objects, res.Rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("unexpected difference: %s", d)
	}
	// Names and namespace come from the manifests; fields only the manifests
	// hold survive; fields they lack come from the rows.
	if res.Keys.Clusters[0].Namespace != "cluster0" || res.Keys.InfraEnvs[0].Name != "ocp" {
		t.Errorf("keys = %+v", res.Keys)
	}
	cd := find(t, res.Objects, kindCD, "ocp")
	if getMap(cd, "spec.controlPlaneConfig") == nil || getMap(cd, "spec.platform.agentBareMetal") == nil {
		t.Errorf("CD lost a manifest field or lacks the platform: %v", cd.Object["spec"])
	}
	if cd.Object["status"] != nil || get(cd, "metadata.creationTimestamp") != nil {
		t.Error("server fields of the manifest survived")
	}
	nm := find(t, res.Objects, kindNMState, "master-0")
	if nm.GetLabels()[LabelInfraEnv] != "ocp" {
		t.Errorf("NMStateConfig labels = %v", nm.GetLabels())
	}
	aci := find(t, res.Objects, kindACI, "ocp")
	if getString(aci, "spec.sshPublicKey") == "" || len(getSlice(aci, "spec.networking.machineNetwork")) != 1 {
		t.Error("rows did not fill what the manifest lacks")
	}
	secret := find(t, res.Objects, kindSecret, "ocp-pull-secret")
	if secret.Object["stringData"] != nil {
		t.Error("stringData was not turned into data")
	}
	if len(res.Keys.Clusters) != 1 {
		t.Errorf("keys = %+v", res.Keys.Clusters)
	}
}

func TestManifestsIntoOtherNamespace(t *testing.T) {
	mf, err := LoadManifests(abiManifests("192.168.111.5"))
	if err != nil {
		t.Fatal(err)
	}
	// The manifests' namespace is node 0's; only the mapping moves it, -n does not.
	res, err := FromRows(abiRows(), Options{Manifests: mf, Namespace: "ignored", NamespaceMapping: map[string]string{"cluster0": "elsewhere"}})
	if err != nil {
		t.Fatal(err)
	}
	if diffs, _ := Diff(res.Objects, res.Rows); len(diffs) != 0 {
		t.Fatalf("diffs = %v", diffs)
	}
	ie := find(t, res.Objects, kindInfraEnv, "ocp")
	if ie.GetNamespace() != "elsewhere" || getString(ie, "spec.clusterRef.namespace") != "elsewhere" {
		t.Errorf("InfraEnv %s, clusterRef %v: references must follow the namespace", ie.GetNamespace(), getMap(ie, "spec.clusterRef"))
	}
}

func TestManifestsDisagreeing(t *testing.T) {
	mf, err := LoadManifests(abiManifests("192.168.111.99"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := FromRows(abiRows(), Options{Manifests: mf})
	if err != nil {
		t.Fatal(err)
	}
	diffs, _ := Diff(res.Objects, res.Rows)
	if len(diffs) != 1 || diffs[0].Field != "spec.apiVIPs" {
		t.Fatalf("diffs = %v", diffs)
	}
	// A single VIP that is not the first of the list makes the controller fail.
	aci := find(t, res.Objects, kindACI, "ocp")
	set(aci, "spec.apiVIP", "192.168.111.98")
	diffs, _ = Diff(res.Objects, res.Rows)
	if len(diffs) != 2 || diffs[0].Field != "spec.apiVIP" {
		t.Fatalf("diffs = %v", diffs)
	}
	// Preferring the database resolves it, the deprecated single VIP too.
	res, err = FromRows(abiRows(), Options{Manifests: mf, PreferDatabase: true})
	if err != nil {
		t.Fatal(err)
	}
	if diffs, _ := Diff(res.Objects, res.Rows); len(diffs) != 0 {
		t.Fatalf("with PreferDatabase: %v", diffs)
	}
}

func TestLoadManifestsErrors(t *testing.T) {
	tests := []struct {
		name, file, data, want string
	}{
		{"wrong kind", "infraenv.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "holds a ConfigMap"},
		{"two objects", "cluster-image-set.yaml", "kind: ClusterImageSet\n---\nkind: ClusterImageSet\n", "holds 2 objects"},
		{"bad yaml", "cluster-deployment.yaml", "kind: [\n", "parse manifest cluster-deployment.yaml"},
		{"secret never echoed", "pull-secret.yaml", "kind: Secret\nstringData: {.dockerconfigjson: 'c2VjcmV0LXVzZXI\n", "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadManifests(fstest.MapFS{tt.file: {Data: []byte(tt.data)}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "c2VjcmV0") {
				t.Fatal("error echoes the secret")
			}
		})
	}
	mf, err := LoadManifests(fstest.MapFS{})
	if err != nil || mf.ClusterDeployment != nil {
		t.Fatalf("an empty folder is fine: %v", err)
	}
	if _, err := FromRows(abiRows(), Options{Manifests: mf}); err == nil {
		t.Fatal("no namespace anywhere must fail")
	}
}

func TestManifestsForUnknownCluster(t *testing.T) {
	mf, err := LoadManifests(abiManifests("192.168.111.5"))
	if err != nil {
		t.Fatal(err)
	}
	rows := abiRows()
	second := *rows.Clusters[0]
	second.ID, second.Name = "6c2d8a1e-1d1b-4d51-9e50-3f1f4a8a0099", "other"
	rows.Clusters[0].Name = "renamed"
	rows.Clusters = append(rows.Clusters, &second)
	if _, err := FromRows(rows, Options{Manifests: mf}); err == nil || !strings.Contains(err.Error(), `cluster "ocp"`) {
		t.Fatalf("error = %v", err)
	}
}
