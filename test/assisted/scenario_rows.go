package assisted

import (
	"crypto/md5" // #nosec G501 -- the service's proxy_hash is an MD5
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ScenarioRows turns a scenario into the rows assisted-service writes when the
// agent-based installer registers its manifests over REST
// (cmd/agentbasedinstaller RegisterCluster/RegisterInfraEnv ->
// controllers.CreateClusterParams / CreateInfraEnvParams -> the service's
// defaults), then hosts register and installation starts. Node 0 runs in REST
// mode, so no row has a kube key.
func ScenarioRows(s Scenario) ([]ScenarioRow, error) {
	objs := scenarioIndex(s.Objects)
	cd, aci := objs.one("ClusterDeployment"), objs.one("AgentClusterInstall")
	ie := objs.one("InfraEnv")
	if cd == nil || aci == nil || ie == nil {
		return nil, fmt.Errorf("scenario %s: needs a ClusterDeployment, an AgentClusterInstall and an InfraEnv", s.Name)
	}
	clusterID := ScenarioUUID(s.Name + "/cluster")
	infraEnvID := ScenarioUUID(s.Name + "/infra-env")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	pullSecret, err := objs.secretValue(str(cd, "spec", "pullSecretRef", "name"), ".dockerconfigjson")
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	cis := objs.named("ClusterImageSet", str(aci, "spec", "imageSetRef", "name"))
	if cis == nil {
		return nil, fmt.Errorf("scenario %s: no ClusterImageSet %q", s.Name, str(aci, "spec", "imageSetRef", "name"))
	}
	cluster, networks, err := clusterRow(s, objs, cd, aci, clusterID, pullSecret, str(cis, "spec", "releaseImage"))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	cluster["created_at"] = now
	rows := []ScenarioRow{{Table: "clusters", Values: cluster}}
	rows = append(rows, networks...)

	ieRow, err := infraEnvRow(s, objs, ie, infraEnvID, clusterID, cluster)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	ieRow["created_at"] = now
	rows = append(rows, ScenarioRow{Table: "infra_envs", Values: ieRow})

	hosts := s.Hosts
	for _, a := range objs.all("Agent") {
		hosts = append(hosts, hostFromAgent(a))
	}
	for _, h := range hosts {
		rows = append(rows, ScenarioRow{Table: "hosts", Values: hostRow(h, clusterID, infraEnvID, now, len(hosts) == 1)})
	}
	return rows, nil
}

func clusterRow(s Scenario, objs scenarioObjects, cd, aci *unstructured.Unstructured, id, pullSecret, releaseImage string) (map[string]any, []ScenarioRow, error) {
	cp := integer(aci, "spec", "provisionRequirements", "controlPlaneAgents")
	workers := integer(aci, "spec", "provisionRequirements", "workerAgents")
	umn, _, _ := unstructured.NestedBool(aci.Object, "spec", "networking", "userManagedNetworking")
	umn = umn || (cp == 1 && workers == 0)
	ha := "Full"
	if cp == 1 && workers == 0 {
		ha = "None"
	}
	row := map[string]any{
		"id": id, "kind": "Cluster", "href": "/api/assisted-install/v2/clusters/" + id,
		"name": str(cd, "spec", "clusterName"), "base_dns_domain": str(cd, "spec", "baseDomain"),
		"openshift_version": s.OpenshiftVersion, "ocp_release_image": releaseImage, "cpu_architecture": "x86_64",
		"status": "installing", "status_info": "Installation in progress", "pull_secret": pullSecret, "pull_secret_set": true,
		"ssh_public_key": strings.TrimSpace(str(aci, "spec", "sshPublicKey")), "high_availability_mode": ha,
		"user_managed_networking": umn, "vip_dhcp_allocation": false, "control_plane_count": cp,
		"schedulable_masters": boolean(aci, "spec", "mastersSchedulable"), "load_balancer_type": "cluster-managed",
		"hyperthreading": hyperthreadingOf(aci), "install_config_overrides": aci.GetAnnotations()["agent-install.openshift.io/install-config-overrides"],
		"ntp_sources": strings.Join(strs(aci, "spec", "ntpSources"), ","),
		"http_proxy":  str(aci, "spec", "proxy", "httpProxy"), "https_proxy": str(aci, "spec", "proxy", "httpsProxy"),
		"no_proxy": str(aci, "spec", "proxy", "noProxy"), "tags": aci.GetLabels()["agentclusterinstalls.agent-install.openshift.io/consumer"],
		"ignored_cluster_validations": "", "ignored_host_validations": "",
	}
	if lb := str(aci, "spec", "loadBalancer", "type"); lb == "UserManaged" {
		row["load_balancer_type"] = "user-managed"
	}
	// The service picks the platform when the manifest leaves it out.
	platform := map[string]string{"BareMetal": "baremetal", "None": "none", "VSphere": "vsphere", "Nutanix": "nutanix", "External": "external"}[str(aci, "spec", "platformType")]
	if platform == "" {
		platform = "baremetal"
		if umn {
			platform = "none"
		}
	}
	row["platform_type"] = platform
	networkType := str(aci, "spec", "networking", "networkType")
	if networkType == "" {
		networkType = "OVNKubernetes" // the service's default from 4.12 on
	}
	row["network_type"] = networkType
	if de, ok, _ := unstructured.NestedMap(aci.Object, "spec", "diskEncryption"); ok {
		enableOn, _ := de["enableOn"].(string)
		mode, _ := de["mode"].(string)
		row["disk_encryption_enable_on"], row["disk_encryption_mode"] = orDefault(enableOn, "none"), orDefault(mode, "tpmv2")
		row["disk_encryption_tang_servers"], _ = de["tangServers"].(string)
	}
	if url := str(aci, "spec", "ignitionEndpoint", "url"); url != "" {
		row["ignition_endpoint_url"] = url
		row["ignition_endpoint_ca_certificate"] = ""
		if ref := str(aci, "spec", "ignitionEndpoint", "caCertificateReference", "name"); ref != "" {
			pem, err := objs.secretValue(ref, "tls.crt")
			if err != nil {
				return nil, nil, err
			}
			row["ignition_endpoint_ca_certificate"] = base64.StdEncoding.EncodeToString([]byte(pem))
		}
	}
	if ref := str(aci, "spec", "mirrorRegistryRef", "name"); ref != "" {
		mirror, err := objs.mirrorConfiguration(ref)
		if err != nil {
			return nil, nil, err
		}
		row["mirror_registry_configuration"] = mirror
	}

	var rows []ScenarioRow
	var families []string
	for _, n := range list(aci, "spec", "networking", "clusterNetwork") {
		rows = append(rows, ScenarioRow{Table: "cluster_networks", Values: map[string]any{"cluster_id": id, "cidr": n["cidr"], "host_prefix": toInt64(n["hostPrefix"])}})
		families = append(families, fmt.Sprint(n["cidr"]))
	}
	for _, cidr := range strs(aci, "spec", "networking", "serviceNetwork") {
		rows = append(rows, ScenarioRow{Table: "service_networks", Values: map[string]any{"cluster_id": id, "cidr": cidr}})
	}
	for _, n := range list(aci, "spec", "networking", "machineNetwork") {
		rows = append(rows, ScenarioRow{Table: "machine_networks", Values: map[string]any{"cluster_id": id, "cidr": n["cidr"]}})
	}
	for _, v := range vips(str(aci, "spec", "apiVIP"), strs(aci, "spec", "apiVIPs")) {
		rows = append(rows, ScenarioRow{Table: "api_vips", Values: map[string]any{"cluster_id": id, "ip": v, "verification": "unverified"}})
	}
	for _, v := range vips(str(aci, "spec", "ingressVIP"), strs(aci, "spec", "ingressVIPs")) {
		rows = append(rows, ScenarioRow{Table: "ingress_vips", Values: map[string]any{"cluster_id": id, "ip": v, "verification": "unverified"}})
	}
	// A dual-stack cluster's primary stack is the family of its first network.
	if len(families) > 0 && dualStackCIDRs(families) {
		if p, err := netip.ParsePrefix(families[0]); err == nil && p.Addr().Is6() {
			row["primary_ip_stack"] = int64(6)
		} else {
			row["primary_ip_stack"] = int64(4)
		}
	}
	return row, rows, nil
}

func infraEnvRow(s Scenario, objs scenarioObjects, ie *unstructured.Unstructured, id, clusterID string, cluster map[string]any) (map[string]any, error) {
	pullSecret, err := objs.secretValue(str(ie, "spec", "pullSecretRef", "name"), ".dockerconfigjson")
	if err != nil {
		return nil, err
	}
	httpProxy, httpsProxy, noProxy := str(ie, "spec", "proxy", "httpProxy"), str(ie, "spec", "proxy", "httpsProxy"), str(ie, "spec", "proxy", "noProxy")
	// ABI registers its InfraEnv over REST with IMAGE_TYPE_ISO, default
	// full-iso, when the manifest names no imageType (openshift/assisted-service
	// cmd/agentbasedinstaller/client/main.go RegisterOptions, register.go
	// RegisterInfraEnv -> controllers.CreateInfraEnvParams).
	row := map[string]any{
		"id": id, "name": ie.GetName(), "kind": "InfraEnv", "href": "/api/assisted-install/v2/infra-envs/" + id,
		"type": orDefault(str(ie, "spec", "imageType"), "full-iso"), "pull_secret": pullSecret, "pull_secret_set": true,
		"ssh_authorized_key": strings.TrimSpace(str(ie, "spec", "sshAuthorizedKey")),
		"proxy_http_proxy":   httpProxy, "proxy_https_proxy": httpsProxy, "proxy_no_proxy": noProxy,
		"proxy_hash":               fmt.Sprintf("%x", md5.Sum([]byte(httpProxy+httpsProxy+noProxy))), // #nosec G401
		"additional_ntp_sources":   strings.Join(strs(ie, "spec", "additionalNTPSources"), ","),
		"ntp_sources":              strings.Join(strs(ie, "spec", "ntpSources"), ","),
		"ignition_config_override": str(ie, "spec", "ignitionConfigOverride"),
		"cpu_architecture":         orDefault(str(ie, "spec", "cpuArchitecture"), "x86_64"),
		"openshift_version":        s.OpenshiftVersion,
		"additional_trust_bundle":  strings.TrimSpace(str(ie, "spec", "additionalTrustBundle")),
		"generated":                true,
	}
	if str(ie, "spec", "clusterRef", "name") != "" {
		row["cluster_id"] = clusterID
	}
	if delay, ok, _ := unstructured.NestedInt64(ie.Object, "spec", "networkDiscoveryDelaySeconds"); ok {
		row["network_discovery_delay_seconds"] = delay
	}
	if kargs := list(ie, "spec", "kernelArguments"); len(kargs) > 0 {
		type karg struct {
			Operation string `json:"operation,omitempty"`
			Value     string `json:"value,omitempty"`
		}
		var out []karg
		for _, k := range kargs {
			op, _ := k["operation"].(string)
			v, _ := k["value"].(string)
			out = append(out, karg{op, v})
		}
		b, _ := json.Marshal(out)
		row["kernel_arguments"] = string(b)
	}
	if ref := str(ie, "spec", "mirrorRegistryRef", "name"); ref != "" {
		mirror, err := objs.mirrorConfiguration(ref)
		if err != nil {
			return nil, err
		}
		row["mirror_registry_configuration"] = mirror
	}
	static, err := staticNetworkConfig(objs, ie)
	if err != nil {
		return nil, err
	}
	row["static_network_config"] = static
	return row, nil
}

// staticNetworkConfig is what the service stores from the NMStateConfigs the
// InfraEnv's selector matches: each config as the JSON the manifest's YAML
// converts to, with its MAC map, sorted (FormatStaticNetworkConfigForDB).
func staticNetworkConfig(objs scenarioObjects, ie *unstructured.Unstructured) (string, error) {
	sel, _, _ := unstructured.NestedStringMap(ie.Object, "spec", "nmStateConfigLabelSelector", "matchLabels")
	type mac struct {
		LogicalNicName string `json:"logical_nic_name,omitempty"`
		MacAddress     string `json:"mac_address"`
	}
	type host struct {
		MacInterfaceMap []mac  `json:"mac_interface_map,omitempty"`
		NetworkYaml     string `json:"network_yaml,omitempty"`
	}
	var hosts []host
	for _, n := range objs.all("NMStateConfig") {
		if len(sel) == 0 || !matches(sel, n.GetLabels()) {
			continue
		}
		config, _, _ := unstructured.NestedFieldNoCopy(n.Object, "spec", "config")
		raw, err := json.Marshal(config)
		if err != nil {
			return "", err
		}
		h := host{NetworkYaml: string(raw)}
		for _, i := range list(n, "spec", "interfaces") {
			name, _ := i["name"].(string)
			addr, _ := i["macAddress"].(string)
			h.MacInterfaceMap = append(h.MacInterfaceMap, mac{name, addr})
		}
		sort.SliceStable(h.MacInterfaceMap, func(a, b int) bool {
			x, y := h.MacInterfaceMap[a], h.MacInterfaceMap[b]
			return x.LogicalNicName < y.LogicalNicName || (x.LogicalNicName == y.LogicalNicName && x.MacAddress < y.MacAddress)
		})
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return "", nil
	}
	sort.SliceStable(hosts, func(a, b int) bool {
		if hosts[a].NetworkYaml != hosts[b].NetworkYaml {
			return hosts[a].NetworkYaml < hosts[b].NetworkYaml
		}
		return fmt.Sprint(hosts[a].MacInterfaceMap) < fmt.Sprint(hosts[b].MacInterfaceMap)
	})
	b, err := json.Marshal(hosts)
	return string(b), err
}

func hostFromAgent(a *unstructured.Unstructured) ScenarioHost {
	approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
	return ScenarioHost{ID: a.GetName(), Role: str(a, "spec", "role"), Hostname: str(a, "spec", "hostname"),
		InstallationDiskID: str(a, "spec", "installation_disk_id"), InstallerArgs: str(a, "spec", "installerArgs"),
		IgnitionOverrides: str(a, "spec", "ignitionConfigOverrides"), Approved: approved}
}

// installingStage is where each host stands in node 0's database just before
// node 0 (the bootstrap) reboots, as the release-4.19 service wrote it in the
// rehearsal (docs/restore.md): the bootstrap reported Rebooting last (its
// installer reboots after the control plane and, in ABI, the workers are up:
// assisted-installer src/installer/installer.go), the other hosts were
// reported Joined. The percentage is the service's: the stage's place in the
// host's stage list, (index+1)/len*100, truncated (openshift/assisted-service
// release-4.19 internal/host/host.go UpdateInstallProgress; the lists in
// internal/host/common.go BootstrapStages, MasterStages, WorkerStages,
// SnoStages; seen: 70 for a bootstrap at Rebooting, 85 for a master Joined).
// status_info is the stage's name (UpdateInstallProgress statusInfo).
func installingStage(h ScenarioHost, single bool) (string, int64) {
	var stages []string
	stage := "Joined"
	switch {
	case single:
		stages = []string{"Starting installation", "Installing", "Waiting for bootkube", "Writing image to disk", "Rebooting", "Joined", "Done"}
		stage = "Rebooting"
	case h.Bootstrap:
		stages = []string{"Starting installation", "Installing", "Writing image to disk", "Waiting for control plane", "Waiting for bootkube",
			"Waiting for controller", "Rebooting", "Configuring", "Joined", "Done"}
		stage = "Rebooting"
	case h.Role == "worker":
		stages = []string{"Starting installation", "Installing", "Writing image to disk", "Waiting for control plane", "Rebooting",
			"Waiting for ignition", "Configuring", "Joined", "Done"}
	default:
		stages = []string{"Starting installation", "Installing", "Writing image to disk", "Rebooting", "Configuring", "Joined", "Done"}
	}
	for i, st := range stages {
		if st == stage {
			return stage, int64(float64(i+1) / float64(len(stages)) * 100)
		}
	}
	return stage, 0
}

func hostRow(h ScenarioHost, clusterID, infraEnvID string, now time.Time, single bool) map[string]any {
	disk := orDefault(h.InstallationDiskID, "/dev/disk/by-id/wwn-0x"+strings.ReplaceAll(h.ID[:8], "-", ""))
	var v4, v6 []string
	for _, ip := range h.IPs {
		if strings.Contains(ip, ":") {
			v6 = append(v6, ip)
		} else {
			v4 = append(v4, ip)
		}
	}
	inventory, _ := json.Marshal(map[string]any{
		"hostname": h.Hostname,
		"disks": []map[string]any{{"id": disk, "by_path": "/dev/disk/by-path/pci-0000:00:05.0", "name": "sda", "path": "/dev/sda",
			"size_bytes": 128849018880, "installation_eligibility": map[string]any{"eligible": true}}},
		"interfaces": []map[string]any{{"name": "eth0", "ipv4_addresses": v4, "ipv6_addresses": v6, "mac_address": "52:54:00:00:00:01"}},
	})
	stage, pct := installingStage(h, single)
	return map[string]any{
		"id": h.ID, "infra_env_id": infraEnvID, "cluster_id": clusterID, "kind": "Host",
		"href":   "/api/assisted-install/v2/infra-envs/" + infraEnvID + "/hosts/" + h.ID,
		"status": "installing-in-progress", "status_info": stage, "role": h.Role, "suggested_role": h.Role,
		"progress_current_stage": stage, "progress_installation_percentage": pct,
		"progress_stage_started_at": now, "progress_stage_updated_at": now,
		"bootstrap": h.Bootstrap, "requested_hostname": h.Hostname, "approved": h.Approved,
		"installation_disk_id": disk, "installation_disk_path": "/dev/sda", "installer_args": h.InstallerArgs,
		"ignition_config_overrides": h.IgnitionOverrides, "inventory": string(inventory),
		"registered_at": now, "created_at": now, "updated_at": now,
	}
}
