package recreate

import (
	"crypto/md5" // #nosec G501 -- mirrors the service's proxy hash
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func md5Hex(s string) string { return fmt.Sprintf("%x", md5.Sum([]byte(s))) } // #nosec G401

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %q among %d objects", kind, name, len(objs))
	return nil
}

func TestFromRowsMatchesRows(t *testing.T) {
	rows := compactRows()
	res, err := FromRows(rows, Options{Namespace: "cluster0"})
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

	// The kube keys name the objects that were built.
	if len(res.Keys.Clusters) != 1 || res.Keys.Clusters[0] != (ClusterKey{ID: testClusterID, Name: "ocp", Namespace: "cluster0"}) {
		t.Errorf("cluster keys = %+v", res.Keys.Clusters)
	}
	if len(res.Keys.InfraEnvs) != 1 || res.Keys.InfraEnvs[0].Name != "ocp-infra-env" {
		t.Errorf("infra-env keys = %+v (the UI's underscore name must become a DNS label)", res.Keys.InfraEnvs)
	}
	if len(res.Keys.Hosts) != 3 || res.Keys.Hosts[0].Namespace != "cluster0" {
		t.Errorf("host keys = %+v", res.Keys.Hosts)
	}
	if rows.Clusters[0].KubeKeyName != "" || rows.InfraEnvs[0].Name != "ocp_infra-env" {
		t.Error("FromRows changed the caller's rows")
	}
	cd := find(t, res.Objects, kindCD, "ocp")
	if sel := getMap(cd, "spec.platform.agentBareMetal.agentSelector.matchLabels"); sel[LabelInfraEnv] != "ocp-infra-env" {
		t.Errorf("agentSelector = %v", sel)
	}
	if v, _ := getBool(cd, "spec.preserveOnDelete"); !v {
		t.Error("ClusterDeployment of cluster 0 must preserve on delete")
	}
	agent := find(t, res.Objects, kindAgent, rows.Hosts[1].ID)
	if getString(agent, "spec.clusterDeploymentName.name") != "ocp" || agent.GetLabels()[LabelInfraEnv] != "ocp-infra-env" {
		t.Errorf("agent binding/label wrong: %v", agent.Object)
	}
	if agent.GetAnnotations()[AnnotationSkipSpokeCleanup] != "true" {
		t.Error("agents must skip spoke cleanup")
	}
	// Restore order: ClusterImageSet first, Agents last.
	if res.Objects[0].GetKind() != kindCIS || res.Objects[len(res.Objects)-1].GetKind() != kindAgent {
		t.Errorf("order: first %s, last %s", res.Objects[0].GetKind(), res.Objects[len(res.Objects)-1].GetKind())
	}
	for i := 1; i < len(res.Objects); i++ {
		if restoreRank[res.Objects[i-1].GetKind()] > restoreRank[res.Objects[i].GetKind()] {
			t.Errorf("%s before %s", res.Objects[i-1].GetKind(), res.Objects[i].GetKind())
		}
	}
	// The infra-env shares its cluster's pull secret and mirror ConfigMap.
	var secrets, configMaps int
	for _, o := range res.Objects {
		switch o.GetKind() {
		case kindSecret:
			secrets++
		case kindCM:
			configMaps++
		}
	}
	if secrets != 3 || configMaps != 1 { // pull secret, ignition CA, one host's ignition token
		t.Errorf("secrets = %d, configmaps = %d", secrets, configMaps)
	}
}

func TestFromRowsNames(t *testing.T) {
	rows := compactRows()
	second := *rows.Clusters[0]
	second.ID = "6c2d8a1e-1d1b-4d51-9e50-3f1f4a8a0099"
	second.OCPReleaseImage = "quay.io/openshift-release-dev/ocp-release:4.16.3-aarch64"
	rows.Clusters = append(rows.Clusters, &second)
	res, err := FromRows(rows, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Keys.Clusters[1].Name != "ocp-6c2d8a1e" {
		t.Errorf("second cluster named %q, want a unique name", res.Keys.Clusters[1].Name)
	}
	find(t, res.Objects, kindCIS, "openshift-4.16.3")
	find(t, res.Objects, kindCIS, "openshift-4.16.3-6c2d8a1e")
	if _, err := Diff(res.Objects, res.Rows); err != nil {
		t.Fatal(err)
	}
}

func TestFromRowsErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Rows)
		opts    Options
		wantErr string
		is      error
	}{
		{name: "no namespace", mutate: func(*Rows) {}, is: ErrNoNamespace},
		{name: "no release image", mutate: func(r *Rows) { r.Clusters[0].OCPReleaseImage = "" }, opts: Options{Namespace: "n"}, wantErr: "ocp_release_image"},
		{name: "no pull secret", mutate: func(r *Rows) { r.Clusters[0].PullSecret = "" }, opts: Options{Namespace: "n"}, wantErr: "clusters.pull_secret"},
		{name: "bad kernel args", mutate: func(r *Rows) { s := "{"; r.InfraEnvs[0].KernelArguments = &s }, opts: Options{Namespace: "n"}, wantErr: "kernel arguments"},
		{name: "bad static network", mutate: func(r *Rows) { r.InfraEnvs[0].StaticNetworkConfig = "[" }, opts: Options{Namespace: "n"}, wantErr: "static network config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := compactRows()
			tt.mutate(rows)
			_, err := FromRows(rows, tt.opts)
			switch {
			case err == nil:
				t.Fatal("no error")
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Fatalf("error %v, want %v", err, tt.is)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not mention %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "c2VjcmV0") {
				t.Fatal("error leaks the pull secret")
			}
		})
	}
}

func TestYAMLNetworkConfigShowsAsDrift(t *testing.T) {
	// The UI stores network YAML as typed; the controller would send back the
	// API server's JSON, so that is a difference Diff must report.
	rows := compactRows()
	rows.InfraEnvs[0].StaticNetworkConfig = `[{"mac_interface_map":[{"logical_nic_name":"eth0","mac_address":"52:54:01:aa:bb:01"}],"network_yaml":"interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n"}]`
	res, err := FromRows(rows, Options{Namespace: "n"})
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := Diff(res.Objects, res.Rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 || diffs[0].Column != "infra_envs.static_network_config" {
		t.Fatalf("diffs = %v", diffs)
	}
	want := `[{"mac_interface_map":[{"logical_nic_name":"eth0","mac_address":"52:54:01:aa:bb:01"}],"network_yaml":"{\"interfaces\":[{\"name\":\"eth0\",\"state\":\"up\",\"type\":\"ethernet\"}]}"}]`
	if diffs[0].Object != want {
		t.Errorf("controller's static network config = %v\nwant %s", diffs[0].Object, want)
	}
}
