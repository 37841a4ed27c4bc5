package main

import (
	"fmt"
	"strings"
)

// The compact cluster node 0 installs: three masters on 192.168.111.0/24 with
// static addresses, master-0 being node 0 (the rendezvous host).
const (
	clusterName      = "compact"
	baseDomain       = "example.com"
	openshiftVersion = "4.17.3"
	releaseImage     = "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"
	// sshKey is a real ed25519 public key (its private half was thrown away):
	// the host's assisted-service refuses keys that do not parse.
	sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIzFSb+b+H3PXBVvssIwAWEtK1GPAXuF8qDUrH/AK+tN ops@example.com"
	// pullSecret is planted so that the demo (and its test) can prove it never
	// shows up in any output.
	pullSecret = `{"auths":{"quay.io":{"auth":"ZGVtby11c2VyOmRlbW8tcHVsbC1zZWNyZXQtbmV2ZXItcHJpbnRlZA==","email":"ops@example.com"}}}`
	// pullSecretAuth is the credential inside pullSecret.
	pullSecretAuth = "ZGVtby11c2VyOmRlbW8tcHVsbC1zZWNyZXQtbmV2ZXItcHJpbnRlZA=="
)

// master is one host of the compact cluster.
type master struct {
	name string
	ip   string
	mac  string
}

var masters = []master{
	{"master-0", "192.168.111.20", "52:54:00:ab:00:01"},
	{"master-1", "192.168.111.21", "52:54:00:ab:00:02"},
	{"master-2", "192.168.111.22", "52:54:00:ab:00:03"},
}

// abiManifests are the agent-based installer's manifests as node 0 holds them
// (the installer writes one file per kind into cluster-manifests/).
func abiManifests() map[string]string {
	m := map[string]string{}
	m["cluster-deployment.yaml"] = fmt.Sprintf(`apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  baseDomain: %[3]s
  clusterInstallRef:
    group: extensions.hive.openshift.io
    kind: AgentClusterInstall
    name: %[1]s
    version: v1beta1
  clusterName: %[1]s
  controlPlaneConfig:
    servingCertificates: {}
  platform:
    agentBareMetal:
      agentSelector: {}
  pullSecretRef:
    name: pull-secret
`, clusterName, clusterNamespace, baseDomain)

	m["agent-cluster-install.yaml"] = fmt.Sprintf(`apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  apiVIPs:
  - 192.168.111.5
  ingressVIPs:
  - 192.168.111.4
  clusterDeploymentRef:
    name: %[1]s
  imageSetRef:
    name: openshift-%[3]s
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    machineNetwork:
    - cidr: 192.168.111.0/24
    serviceNetwork:
    - 172.30.0.0/16
    networkType: OVNKubernetes
  platformType: BareMetal
  provisionRequirements:
    controlPlaneAgents: 3
  sshPublicKey: %[4]s
`, clusterName, clusterNamespace, openshiftVersion, sshKey)

	m["cluster-image-set.yaml"] = fmt.Sprintf(`apiVersion: hive.openshift.io/v1
kind: ClusterImageSet
metadata:
  name: openshift-%[1]s
spec:
  releaseImage: %[2]s
`, openshiftVersion, releaseImage)

	m["pull-secret.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: Secret
type: kubernetes.io/dockerconfigjson
metadata:
  name: pull-secret
  namespace: %[1]s
stringData:
  .dockerconfigjson: '%[2]s'
`, clusterNamespace, pullSecret)

	m["infraenv.yaml"] = fmt.Sprintf(`apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  clusterRef:
    name: %[1]s
    namespace: %[2]s
  cpuArchitecture: x86_64
  nmStateConfigLabelSelector:
    matchLabels:
      infraenvs.agent-install.openshift.io: %[1]s
  pullSecretRef:
    name: pull-secret
  sshAuthorizedKey: %[3]s
`, clusterName, clusterNamespace, sshKey)

	var nm strings.Builder
	for i, h := range masters {
		if i > 0 {
			nm.WriteString("---\n")
		}
		fmt.Fprintf(&nm, `apiVersion: agent-install.openshift.io/v1beta1
kind: NMStateConfig
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    infraenvs.agent-install.openshift.io: %[3]s
spec:
  config:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: %[4]s
      ipv4:
        enabled: true
        dhcp: false
        address:
        - ip: %[5]s
          prefix-length: 24
      ipv6:
        enabled: false
    dns-resolver:
      config:
        server:
        - 192.168.111.1
    routes:
      config:
      - destination: 0.0.0.0/0
        next-hop-address: 192.168.111.1
        next-hop-interface: eno1
        table-id: 254
  interfaces:
  - name: eno1
    macAddress: %[4]s
`, h.name, clusterNamespace, clusterName, h.mac, h.ip)
	}
	m["nmstateconfig.yaml"] = nm.String()
	return m
}

// abiManifestOrder is the order the manifests are parsed in (the
// ClusterDeployment first: the row generator reads it first).
var abiManifestOrder = []string{
	"cluster-deployment.yaml", "agent-cluster-install.yaml", "cluster-image-set.yaml",
	"pull-secret.yaml", "infraenv.yaml", "nmstateconfig.yaml",
}
