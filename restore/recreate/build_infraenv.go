package recreate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// hostStaticNetworkConfig is one element of infra_envs.static_network_config.
type hostStaticNetworkConfig struct {
	MacInterfaceMap []macInterface `json:"mac_interface_map,omitempty"`
	NetworkYaml     string         `json:"network_yaml,omitempty"`
}

type macInterface struct {
	LogicalNicName string `json:"logical_nic_name,omitempty"`
	MacAddress     string `json:"mac_address"`
}

type kernelArgument struct {
	Operation string `json:"operation,omitempty"`
	Value     string `json:"value,omitempty"`
}

// infraEnvObjects builds the InfraEnv of one row with its NMStateConfigs and,
// when its pull secret is not its cluster's, its own pull-secret Secret.
func (p *plan) infraEnvObjects(ie *InfraEnv) ([]*unstructured.Unstructured, error) {
	name, ns := p.infraEnv[ie.ID], p.ieNS[ie.ID]
	n0 := p.node0.infraEnv(ie)
	var out []*unstructured.Unstructured
	obj := newObject(agentV1b1, kindInfraEnv, ns, name)

	cluster := p.rows.cluster(ie.ClusterID)
	if cluster != nil {
		set(obj, "spec.clusterRef", m{"name": p.cd[cluster.ID], "namespace": p.clusterNS[cluster.ID]})
	}
	switch {
	case cluster != nil && cluster.PullSecret == ie.PullSecret && p.clusterNS[cluster.ID] == ns:
		set(obj, "spec.pullSecretRef", m{"name": p.pull[cluster.ID]})
	case ie.PullSecret != "":
		secret := p.names.take(kindSecret, ns, name+"-pull-secret", ie.ID)
		s := newSecret(ns, secret, "kubernetes.io/dockerconfigjson", map[string]string{pullSecretKey: ie.PullSecret})
		s.SetLabels(map[string]string{labelWatch: "true"})
		out = append(out, s)
		set(obj, "spec.pullSecretRef", m{"name": secret})
	default:
		return nil, fmt.Errorf("infra-env %s has no pull secret (infra_envs.pull_secret)", ie.ID)
	}
	if ie.SSHAuthorizedKey != "" {
		set(obj, "spec.sshAuthorizedKey", ie.SSHAuthorizedKey)
	}
	if proxy := proxyMap(ie.ProxyHTTP, ie.ProxyHTTPS, ie.ProxyNo); proxy != nil {
		set(obj, "spec.proxy", proxy)
	}
	if ie.AdditionalNTPSources != "" {
		set(obj, "spec.additionalNTPSources", splitList(ie.AdditionalNTPSources))
	}
	if ie.NTPSources != "" {
		set(obj, "spec.ntpSources", splitList(ie.NTPSources))
	}
	if ie.IgnitionConfigOverride != "" {
		set(obj, "spec.ignitionConfigOverride", ie.IgnitionConfigOverride)
	}
	if ie.CPUArchitecture != "" {
		set(obj, "spec.cpuArchitecture", ie.CPUArchitecture)
	}
	if ie.Type != "" {
		set(obj, "spec.imageType", ie.Type)
	}
	if ie.AdditionalTrustBundle != "" {
		set(obj, "spec.additionalTrustBundle", ie.AdditionalTrustBundle)
	}
	if ie.NetworkDiscoveryDelaySeconds != nil {
		set(obj, "spec.networkDiscoveryDelaySeconds", *ie.NetworkDiscoveryDelaySeconds)
	}
	kargs, err := parseKernelArguments(ie.KernelArguments)
	if err != nil {
		return nil, fmt.Errorf("infra-env %s: %w", ie.ID, err)
	}
	if len(kargs) > 0 {
		var list []any
		for _, k := range kargs {
			list = append(list, m{"operation": k.Operation, "value": k.Value})
		}
		set(obj, "spec.kernelArguments", list)
	}
	if cluster != nil && p.mirror[cluster.ID] != "" && cluster.MirrorRegistryConfiguration == ie.MirrorRegistryConfiguration {
		set(obj, "spec.mirrorRegistryRef", m{"name": p.mirror[cluster.ID], "namespace": p.clusterNS[cluster.ID]})
	} else if cm := p.mirrorConfigMap(ie.MirrorRegistryConfiguration, ns, name+"-mirror-registry", ie.ID); cm != nil {
		out = append(out, cm)
		set(obj, "spec.mirrorRegistryRef", m{"name": cm.GetName(), "namespace": ns})
	}

	nmstate, err := p.nmStateConfigs(ie, name, n0)
	if err != nil {
		return nil, err
	}
	if len(nmstate) > 0 {
		set(obj, "spec.nmStateConfigLabelSelector", m{"matchLabels": p.nmStateSelector(ie.ID, name)})
	}
	out = append(out, nmstate...)
	out = append(out, p.from(obj, n0, p.manifests.infraEnv(ie.ID)))
	return append(out, p.node0.referenced(p, n0)...), nil
}

func parseKernelArguments(s *string) ([]kernelArgument, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var kargs []kernelArgument
	if err := json.Unmarshal([]byte(*s), &kargs); err != nil {
		return nil, fmt.Errorf("kernel arguments are not a JSON list: %w", err)
	}
	return kargs, nil
}

func parseStaticNetworkConfig(s string) ([]hostStaticNetworkConfig, error) {
	if s == "" {
		return nil, nil
	}
	var cfgs []hostStaticNetworkConfig
	if err := json.Unmarshal([]byte(s), &cfgs); err != nil {
		return nil, fmt.Errorf("static network config is not a JSON list: %w", err)
	}
	return cfgs, nil
}

// nmStateSelector is the label the InfraEnv selects its NMStateConfigs with:
// node 0's selector when node 0 had one (exported or in the manifests), else
// the InfraEnv label ABI uses (installer pkg/asset/agent/manifests/common.go,
// getNMStateConfigLabels).
func (p *plan) nmStateSelector(infraEnvID, name string) m {
	if ie := p.rows.infraEnv(infraEnvID); ie != nil {
		if n0 := p.node0.infraEnv(ie); n0 != nil {
			if sel := getMap(n0, "spec.nmStateConfigLabelSelector.matchLabels"); len(sel) > 0 {
				return sel
			}
		}
	}
	if sel := p.manifests.nmStateSelector(infraEnvID); len(sel) > 0 {
		return sel
	}
	return m{LabelInfraEnv: name}
}

// nmStateConfigs turns every host of static_network_config back into an
// NMStateConfig. The config is the network YAML as an object; the controller
// sends it back as the API server's JSON, so a row written from a CR or ABI
// manifest compares equal, and YAML typed into the UI shows up in Diff.
func (p *plan) nmStateConfigs(ie *InfraEnv, infraEnvName string, n0IE *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	ns := p.ieNS[ie.ID]
	cfgs, err := parseStaticNetworkConfig(ie.StaticNetworkConfig)
	if err != nil {
		return nil, fmt.Errorf("infra-env %s: %w", ie.ID, err)
	}
	labels := map[string]string{}
	for k, v := range p.nmStateSelector(ie.ID, infraEnvName) {
		labels[k], _ = v.(string)
	}
	var out []*unstructured.Unstructured
	for _, cfg := range cfgs {
		config, err := yamlObject(cfg.NetworkYaml)
		if err != nil {
			return nil, fmt.Errorf("infra-env %s: network YAML of %s: %w", ie.ID, macList(cfg.MacInterfaceMap), err)
		}
		var ifaces []any
		for _, mi := range cfg.MacInterfaceMap {
			ifaces = append(ifaces, m{"name": mi.LogicalNicName, "macAddress": mi.MacAddress})
		}
		exported := p.node0.nmStateConfig(n0IE, cfg.MacInterfaceMap)
		manifest := p.manifests.nmStateConfig(cfg.MacInterfaceMap)
		name := infraEnvName + "-" + dnsLabel(firstMAC(cfg.MacInterfaceMap))
		switch {
		case exported != nil:
			name = exported.GetName()
		case manifest != nil:
			name = manifest.GetName()
		}
		obj := newObject(agentV1b1, kindNMState, ns, p.names.take(kindNMState, ns, name, firstMAC(cfg.MacInterfaceMap)))
		obj.SetLabels(labels)
		set(obj, "spec.config", config)
		set(obj, "spec.interfaces", ifaces)
		out = append(out, p.from(obj, exported, manifest))
	}
	return out, nil
}

func firstMAC(ifaces []macInterface) string {
	if len(ifaces) == 0 {
		return ""
	}
	return ifaces[0].MacAddress
}

func macList(ifaces []macInterface) string {
	var macs []string
	for _, i := range ifaces {
		macs = append(macs, i.MacAddress)
	}
	return strings.Join(macs, ",")
}

// yamlObject parses network YAML (JSON is YAML too) into plain JSON values:
// integers stay integers so the API server returns them unchanged.
func yamlObject(s string) (map[string]any, error) {
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	obj, ok := normalizeNumbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

// agent builds the Agent of a host row, named after the host ID.
func (p *plan) agent(h *Host) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	var extra []*unstructured.Unstructured
	ns := p.hostNS(h)
	n0 := p.node0.agent(h)
	a := newObject(agentV1b1, kindAgent, ns, h.ID)
	if ie, ok := p.infraEnv[h.InfraEnvID]; ok {
		a.SetLabels(map[string]string{LabelInfraEnv: ie})
	}
	if n0 == nil {
		// With node 0's Agent the restore's plan sets it (AgentSafety).
		a.SetAnnotations(map[string]string{AnnotationSkipSpokeCleanup: "true"})
	}
	set(a, "spec.approved", h.Approved)
	role := h.Role
	if role == "" {
		role = "auto-assign"
	}
	set(a, "spec.role", role)
	if c := p.rows.cluster(h.ClusterID); c != nil {
		// An Agent without its binding makes the controller unbind the host,
		// which reclaims (reboots) an installed node.
		set(a, "spec.clusterDeploymentName", m{"name": p.cd[c.ID], "namespace": p.clusterNS[c.ID]})
	}
	if h.RequestedHostname != "" {
		set(a, "spec.hostname", h.RequestedHostname)
	}
	switch {
	case h.InstallationDiskID != "":
		set(a, "spec.installation_disk_id", h.InstallationDiskID)
	case h.InstallationDiskPath != "":
		set(a, "spec.installation_disk_path", h.InstallationDiskPath)
	}
	if h.InstallerArgs != "" {
		set(a, "spec.installerArgs", h.InstallerArgs)
	}
	if h.IgnitionConfigOverrides != "" {
		set(a, "spec.ignitionConfigOverrides", h.IgnitionConfigOverrides)
	}
	if h.MachineConfigPoolName != "" {
		set(a, "spec.machineConfigPool", h.MachineConfigPoolName)
	}
	for path, raw := range map[string]string{"spec.nodeLabels": h.NodeLabels, "spec.ignitionEndpointHTTPHeaders": h.IgnitionEndpointHTTPHeaders} {
		labels, err := stringMap(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("host %s: %s: %w", h.ID, path, err)
		}
		if len(labels) > 0 {
			set(a, path, labels)
		}
	}
	if h.IgnitionEndpointToken != "" {
		name := p.names.take(kindSecret, ns, h.ID+"-ignition-token", h.ID)
		extra = append(extra, newSecret(ns, name, "Opaque", map[string]string{ignitionTokenKey: h.IgnitionEndpointToken}))
		set(a, "spec.ignitionEndpointTokenReference", m{"name": name, "namespace": ns})
	}
	if n0 != nil {
		a = p.from(a, n0, nil)
		extra = append(p.node0.referenced(p, n0), extra...)
	}
	return a, extra, nil
}

func stringMap(raw string) (m, error) {
	if raw == "" {
		return nil, nil
	}
	var sm map[string]string
	if err := json.Unmarshal([]byte(raw), &sm); err != nil {
		return nil, fmt.Errorf("not a JSON object of strings: %w", err)
	}
	out := m{}
	for k, v := range sm {
		out[k] = v
	}
	return out, nil
}
