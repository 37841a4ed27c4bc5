package resources

import (
	"math/rand"
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	nodeZero   = "http://192.168.111.80:8090"
	clusterID  = "b53c1137-37e7-4088-9787-9c892faaf8a9"
	infraEnvID = "6a3e9fb4-1d9b-4f0f-8d2e-2c4b5d6e7f80"
	hostID     = "0479107b-3436-45d3-83a8-cb9a1dc4fb9e"
)

// exportYAML is what node 0's API would export: status, server fields and
// owner references with node-0 UIDs.
var exportYAML = []string{`
apiVersion: hive.openshift.io/v1
kind: ClusterImageSet
metadata: {name: openshift-v4.16.0, uid: old-cis, resourceVersion: "11", creationTimestamp: "2025-10-15T17:00:00Z"}
spec: {releaseImage: quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64}
`, `
apiVersion: v1
kind: Namespace
metadata: {name: demo, uid: old-ns, resourceVersion: "12"}
status: {phase: Active}
`, `
apiVersion: v1
kind: Secret
metadata: {name: pull-secret, namespace: demo, uid: old-ps, resourceVersion: "13"}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: '{"auths":{"quay.io":{"auth":"c2VjcmV0LXZhbHVlLXBsYW50ZWQ="}}}'}
`, `
apiVersion: v1
kind: Secret
metadata:
  name: demo-admin-kubeconfig
  namespace: demo
  uid: old-kc
  labels: {hive.openshift.io/cluster-deployment-name: demo, hive.openshift.io/secret-type: kubeconfig}
  ownerReferences: [{apiVersion: hive.openshift.io/v1, kind: ClusterDeployment, name: demo, uid: old-cd, blockOwnerDeletion: true}]
data: {kubeconfig: a3ViZWNvbmZpZy1wbGFudGVk}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: demo-manifests, namespace: demo, uid: old-cm}
data: {99-extra.yaml: "kind: ConfigMap"}
`, `
apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata:
  name: demo
  namespace: demo
  uid: old-cd
  generation: 3
  resourceVersion: "20"
  finalizers: [hive.openshift.io/deprovision]
  managedFields: [{manager: assisted-service, operation: Update}]
spec:
  baseDomain: example.com
  clusterName: demo
  clusterInstallRef: {group: extensions.hive.openshift.io, kind: AgentClusterInstall, name: demo, version: v1beta1}
  platform: {agentBareMetal: {agentSelector: {}}}
  pullSecretRef: {name: pull-secret}
  clusterMetadata: {clusterID: 11111111-2222-3333-4444-555555555555, infraID: ` + clusterID + `, adminKubeconfigSecretRef: {name: demo-admin-kubeconfig}}
status: {apiURL: "https://api.demo.example.com:6443"}
`, `
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: demo
  namespace: demo
  uid: old-aci
  ownerReferences: [{apiVersion: hive.openshift.io/v1, kind: ClusterDeployment, name: demo, uid: old-cd}]
spec:
  clusterDeploymentRef: {name: demo}
  imageSetRef: {name: openshift-v4.16.0}
  ignitionEndpoint: {url: "https://ignition.example.com", caCertificateReference: {name: ca, namespace: demo}}
  networking: {clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}], serviceNetwork: [172.30.0.0/16]}
  provisionRequirements: {controlPlaneAgents: 3}
status:
  debugInfo:
    eventsURL: ` + nodeZero + `/api/assisted-install/v2/events?api_key=OLDTOKEN&cluster_id=` + clusterID + `
    logsURL: ` + nodeZero + `/api/assisted-install/v2/clusters/` + clusterID + `/logs?api_key=OLDTOKEN
    state: installing
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: NMStateConfig
metadata: {name: demo-0, namespace: demo, labels: {infraenvs.agent-install.openshift.io: demo}}
spec: {config: {interfaces: []}, interfaces: [{name: eth0, macAddress: "02:00:00:80:12:14"}]}
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: demo, namespace: demo, uid: old-ie}
spec:
  clusterRef: {name: demo, namespace: demo}
  pullSecretRef: {name: pull-secret}
status:
  isoDownloadURL: http://192.168.111.80:8888/byid/` + infraEnvID + `/4.16/x86_64/full.iso?api_key=OLDTOKEN
  debugInfo: {eventsURL: "` + nodeZero + `/api/assisted-install/v2/events?infra_env_id=` + infraEnvID + `&api_key=OLDTOKEN"}
`, `
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {name: bmh-0, namespace: demo, labels: {infraenvs.agent-install.openshift.io: demo}}
spec: {online: true, bmc: {address: "redfish://10.0.0.1", credentialsName: bmc-secret}}
status:
  operationalStatus: OK
  errorCount: 0
  errorMessage: ""
  poweredOn: true
  hardwareProfile: unknown
  provisioning: {state: externally provisioned, ID: abc}
  goodCredentials: {credentials: {name: bmc-secret, namespace: demo}}
`, `
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata: {name: bmh-bare, namespace: demo}
spec: {online: true}
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata:
  name: ` + hostID + `
  namespace: demo
  uid: old-agent
  labels: {infraenvs.agent-install.openshift.io: demo, agent-install.openshift.io/clusterdeployment-namespace: demo}
  ownerReferences: [{apiVersion: agent-install.openshift.io/v1beta1, kind: InfraEnv, name: demo, uid: old-ie}]
  finalizers: [agent.agent-install.openshift.io/ai-deprovision]
spec:
  approved: true
  role: master
  clusterDeploymentName: {name: demo, namespace: demo}
status:
  debugInfo:
    eventsURL: ` + nodeZero + `/api/assisted-install/v2/events?api_key=OLDTOKEN&host_id=` + hostID + `
    logsURL: ` + nodeZero + `/api/assisted-install/v2/clusters/` + clusterID + `/logs?api_key=OLDTOKEN&host_id=` + hostID + `&logs_type=host
`, `
apiVersion: agent-install.openshift.io/v1beta1
kind: AgentClassification
metadata: {name: sizexl, namespace: demo}
spec: {labelKey: size, labelValue: xlarge, query: ".cpu.count == 4"}
`}

// export returns the node-0 export in a shuffled order.
func export(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, y := range exportYAML {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(y), &m); err != nil {
			t.Fatalf("fixture: %v\n%s", err, y)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	rand.New(rand.NewSource(7)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func find(t *testing.T, p *Plan, kind, name string) *Item {
	t.Helper()
	for _, it := range p.Items {
		if it.Object.GetKind() == kind && it.Source.GetName() == name {
			return it
		}
	}
	t.Fatalf("no %s %s in plan", kind, name)
	return nil
}

type fakeSigner struct{}

func (fakeSigner) SignURL(u, clusterID, infraEnvID string) (string, error) {
	id := clusterID
	if id == "" {
		id = "ie-" + infraEnvID
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	q := parsed.Query()
	q.Set("api_key", "NEW-"+id)
	parsed.RawQuery = q.Encode()
	return parsed.String(), nil
}
