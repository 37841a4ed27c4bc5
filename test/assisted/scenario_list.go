package assisted

import (
	"fmt"
	"strings"
)

// ScenarioPullSecret is the pull secret every scenario uses; tests grep
// outputs for it to prove it never leaks.
const ScenarioPullSecret = `{"auths":{"quay.io":{"auth":"c2NlbmFyaW8tdXNlcjpzY2VuYXJpby1wYXNzd29yZA==","email":"ops@example.com"}}}`

const scenarioSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOrtScenarioKeyOnlyForTestsXXXXXXXXXXXXXXXXXX ops@example.com"

// Scenarios are the realistic clusters the recreate tests run against.
func Scenarios() []Scenario {
	return []Scenario{
		scenarioCompact(), scenarioSNO(), scenarioDualStack(), scenarioStaticNetwork(),
		scenarioProxyMirror(), scenarioOverrides(),
	}
}

// scenarioCommon is what every ABI manifest set has: the ClusterDeployment,
// ClusterImageSet and pull secret, named after the cluster.
func scenarioCommon(name, version string) string {
	return fmt.Sprintf(`apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata:
  name: %[1]s
  namespace: cluster0
spec:
  baseDomain: example.com
  clusterInstallRef:
    group: extensions.hive.openshift.io
    kind: AgentClusterInstall
    name: %[1]s
    version: v1beta1
  clusterName: %[1]s
  controlPlaneConfig:
    servingCertificates: {}
  pullSecretRef:
    name: %[1]s-pull-secret
---
apiVersion: hive.openshift.io/v1
kind: ClusterImageSet
metadata:
  name: openshift-%[2]s
spec:
  releaseImage: quay.io/openshift-release-dev/ocp-release:%[2]s-x86_64
---
apiVersion: v1
kind: Secret
type: kubernetes.io/dockerconfigjson
metadata:
  name: %[1]s-pull-secret
  namespace: cluster0
stringData:
  .dockerconfigjson: '%[3]s'
`, name, version, ScenarioPullSecret)
}

func scenarioInfraEnv(name, extra string) string {
	return fmt.Sprintf(`---
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata:
  name: %[1]s
  namespace: cluster0
spec:
  clusterRef:
    name: %[1]s
    namespace: cluster0
  pullSecretRef:
    name: %[1]s-pull-secret
  sshAuthorizedKey: %[2]s
%[3]s`, name, scenarioSSHKey, extra)
}

func scenario(name, version, aci, infraEnvExtra, more string, hosts ...ScenarioHost) Scenario {
	text := scenarioCommon(name, version) + "---\n" + aci + scenarioInfraEnv(name, infraEnvExtra) + more
	objs, err := ParseObjects([]byte(text))
	if err != nil {
		panic(fmt.Sprintf("scenario %s does not parse: %v", name, err))
	}
	return Scenario{Name: name, Objects: objs, OpenshiftVersion: version, Hosts: hosts}
}

func scenarioHosts(cluster string, roles []string, ips func(i int) []string) []ScenarioHost {
	var out []ScenarioHost
	counts := map[string]int{}
	for i, role := range roles {
		out = append(out, ScenarioHost{
			ID: ScenarioUUID(cluster + "/host/" + fmt.Sprint(i)), Role: role, Bootstrap: i == 0,
			Hostname: fmt.Sprintf("%s-%d", role, counts[role]), IPs: ips(i),
		})
		counts[role]++
	}
	return out
}

func v4(base string) func(int) []string {
	return func(i int) []string { return []string{fmt.Sprintf("%s.%d/24", base, 20+i)} }
}

func scenarioCompact() Scenario {
	return scenario("compact", "4.16.3", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: compact
  namespace: cluster0
spec:
  apiVIPs:
  - 192.168.111.5
  ingressVIPs:
  - 192.168.111.4
  clusterDeploymentRef:
    name: compact
  imageSetRef:
    name: openshift-4.16.3
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
  sshPublicKey: `+scenarioSSHKey+`
`, "", "", scenarioHosts("compact", []string{"master", "master", "master"}, v4("192.168.111"))...)
}

func scenarioSNO() Scenario {
	return scenario("sno", "4.17.0", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: sno
  namespace: cluster0
spec:
  clusterDeploymentRef:
    name: sno
  imageSetRef:
    name: openshift-4.17.0
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    machineNetwork:
    - cidr: 10.0.0.0/24
    serviceNetwork:
    - 172.30.0.0/16
    userManagedNetworking: true
  platformType: None
  provisionRequirements:
    controlPlaneAgents: 1
  sshPublicKey: `+scenarioSSHKey+`
`, "", "", scenarioHosts("sno", []string{"master"}, v4("10.0.0"))...)
}

func scenarioDualStack() Scenario {
	return scenario("dualstack", "4.16.3", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: dualstack
  namespace: cluster0
spec:
  apiVIPs:
  - 192.168.126.100
  - 1001:db8::10
  ingressVIPs:
  - 192.168.126.103
  - 1001:db8::11
  clusterDeploymentRef:
    name: dualstack
  imageSetRef:
    name: openshift-4.16.3
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    - cidr: fd01::/48
      hostPrefix: 64
    machineNetwork:
    - cidr: 192.168.126.0/24
    - cidr: 1001:db8::/120
    serviceNetwork:
    - 172.30.0.0/16
    - fd02::/112
    networkType: OVNKubernetes
  platformType: BareMetal
  provisionRequirements:
    controlPlaneAgents: 3
    workerAgents: 2
  sshPublicKey: `+scenarioSSHKey+`
`, "", "", scenarioHosts("dualstack", []string{"master", "master", "master", "worker", "worker"}, func(i int) []string {
		return []string{fmt.Sprintf("192.168.126.%d/24", 20+i), fmt.Sprintf("1001:db8::%x/120", 0x20+i)}
	})...)
}

// nmState is one host's NMStateConfig as the installer writes nmstateconfig.yaml.
func nmState(cluster string, i int, mac, ip string) string {
	return fmt.Sprintf(`---
apiVersion: agent-install.openshift.io/v1beta1
kind: NMStateConfig
metadata:
  name: master-%[2]d
  namespace: cluster0
  labels:
    infraenvs.agent-install.openshift.io: %[1]s
spec:
  config:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: %[3]s
      ipv4:
        enabled: true
        dhcp: false
        address:
        - ip: %[4]s
          prefix-length: 24
      ipv6:
        enabled: false
    dns-resolver:
      config:
        server:
        - 192.168.140.1
    routes:
      config:
      - destination: 0.0.0.0/0
        next-hop-address: 192.168.140.1
        next-hop-interface: eno1
        table-id: 254
  interfaces:
  - name: eno1
    macAddress: %[3]s
`, cluster, i, mac, ip)
}

func scenarioStaticNetwork() Scenario {
	var nm strings.Builder
	for i := 0; i < 3; i++ {
		nm.WriteString(nmState("static", i, fmt.Sprintf("52:54:00:8a:00:%02x", i+1), fmt.Sprintf("192.168.140.%d", 20+i)))
	}
	return scenario("static", "4.16.3", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: static
  namespace: cluster0
spec:
  apiVIPs:
  - 192.168.140.5
  ingressVIPs:
  - 192.168.140.4
  clusterDeploymentRef:
    name: static
  imageSetRef:
    name: openshift-4.16.3
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    machineNetwork:
    - cidr: 192.168.140.0/24
    serviceNetwork:
    - 172.30.0.0/16
    networkType: OVNKubernetes
  platformType: BareMetal
  provisionRequirements:
    controlPlaneAgents: 3
  sshPublicKey: `+scenarioSSHKey+`
`, `  nmStateConfigLabelSelector:
    matchLabels:
      infraenvs.agent-install.openshift.io: static
`, nm.String(), scenarioHosts("static", []string{"master", "master", "master"}, v4("192.168.140"))...)
}

func scenarioProxyMirror() Scenario {
	mirror := `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: mirror-registries
  namespace: cluster0
data:
  registries.conf: |
    [[registry]]
    location = "quay.io/openshift-release-dev/ocp-release"
    mirror-by-digest-only = true
    [[registry.mirror]]
    location = "registry.lab.example.com:5000/ocp/release"
  ca-bundle.crt: |
    -----BEGIN CERTIFICATE-----
    MIIBszCCAVmgAwIBAgIUScenarioMirrorCAOnlyForTests0wCgYIKoZIzj0EAwIw
    -----END CERTIFICATE-----
`
	return scenario("proxy", "4.16.3", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: proxy
  namespace: cluster0
spec:
  apiVIPs:
  - 10.10.0.5
  ingressVIPs:
  - 10.10.0.4
  clusterDeploymentRef:
    name: proxy
  imageSetRef:
    name: openshift-4.16.3
  mirrorRegistryRef:
    name: mirror-registries
    namespace: cluster0
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    machineNetwork:
    - cidr: 10.10.0.0/24
    serviceNetwork:
    - 172.30.0.0/16
    networkType: OVNKubernetes
  ntpSources:
  - ntp1.lab.example.com
  - ntp2.lab.example.com
  platformType: BareMetal
  provisionRequirements:
    controlPlaneAgents: 3
    workerAgents: 1
  proxy:
    httpProxy: http://proxy.lab.example.com:3128
    httpsProxy: http://proxy.lab.example.com:3128
    noProxy: .lab.example.com,10.10.0.0/24,registry.lab.example.com
  sshPublicKey: `+scenarioSSHKey+`
`, `  proxy:
    httpProxy: http://proxy.lab.example.com:3128
    httpsProxy: http://proxy.lab.example.com:3128
    noProxy: .lab.example.com,10.10.0.0/24,registry.lab.example.com
  additionalNTPSources:
  - ntp1.lab.example.com
  - ntp2.lab.example.com
  additionalTrustBundle: |
    -----BEGIN CERTIFICATE-----
    MIIBszCCAVmgAwIBAgIUScenarioMirrorCAOnlyForTests0wCgYIKoZIzj0EAwIw
    -----END CERTIFICATE-----
  mirrorRegistryRef:
    name: mirror-registries
    namespace: cluster0
`, mirror, scenarioHosts("proxy", []string{"master", "master", "master", "worker"}, v4("10.10.0"))...)
}

func scenarioOverrides() Scenario {
	s := scenario("overrides", "4.15.20", `apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata:
  name: overrides
  namespace: cluster0
  annotations:
    agent-install.openshift.io/install-config-overrides: '{"fips":true,"capabilities":{"baselineCapabilitySet":"None","additionalEnabledCapabilities":["marketplace"]}}'
spec:
  apiVIPs:
  - 172.22.0.5
  ingressVIPs:
  - 172.22.0.4
  clusterDeploymentRef:
    name: overrides
  imageSetRef:
    name: openshift-4.15.20
  networking:
    clusterNetwork:
    - cidr: 10.128.0.0/14
      hostPrefix: 23
    machineNetwork:
    - cidr: 172.22.0.0/24
    serviceNetwork:
    - 172.30.0.0/16
    networkType: OVNKubernetes
  platformType: BareMetal
  provisionRequirements:
    controlPlaneAgents: 3
    workerAgents: 2
  controlPlane:
    name: master
    hyperthreading: Enabled
  compute:
  - name: worker
    hyperthreading: Disabled
  diskEncryption:
    enableOn: masters
    mode: tpmv2
  mastersSchedulable: true
  sshPublicKey: `+scenarioSSHKey+`
`, `  kernelArguments:
  - operation: append
    value: rd.net.timeout.carrier=60
  ignitionConfigOverride: '{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,restored"}}]}}'
`, "", scenarioHosts("overrides", []string{"master", "master", "master", "worker", "worker"}, v4("172.22.0"))...)
	s.Hosts[3].InstallerArgs = `["--append-karg","ip=dhcp"]`
	s.Hosts[4].IgnitionOverrides = `{"ignition":{"version":"3.1.0"}}`
	return s
}
