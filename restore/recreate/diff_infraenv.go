package recreate

import (
	"crypto/md5" // #nosec G501 -- the service's proxy_hash is an MD5; compared, not used for security
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultISOImageType is the InfraEnv controller's default image type
// (ISO_IMAGE_TYPE, default minimal-iso: openshift/assisted-service
// internal/controller/controllers/infraenv_controller.go, InfraEnvConfig).
const DefaultISOImageType = "minimal-iso"

// infraEnv makes the InfraEnv controller's comparisons (updateInfraEnv and
// what UpdateInfraEnvInternal then writes) for one InfraEnv.
func (d *differ) infraEnv(o *unstructured.Unstructured) error {
	ns := o.GetNamespace()
	ie := d.rows.infraEnvByKubeKey(ns, o.GetName())
	if ie == nil {
		d.note(o, "(object)", "infra_envs.name", o.GetName(), nil,
			"no infra-env row has this name and namespace: the controller would register a new infra-env with a new ID")
		return nil
	}
	d.markSeen(&d.seen.infraEnvs, ie.ID)

	d.clusterRef(o, ie)
	if p := getMap(o, "spec.proxy"); p != nil {
		fields := []struct{ field, column, db string }{
			{"httpProxy", "infra_envs.proxy_http_proxy", ie.ProxyHTTP},
			{"httpsProxy", "infra_envs.proxy_https_proxy", ie.ProxyHTTPS},
			{"noProxy", "infra_envs.proxy_no_proxy", ie.ProxyNo},
		}
		var concat string
		before := len(d.out)
		for _, f := range fields {
			v, _ := p[f.field].(string)
			concat += v
			d.str(o, "spec.proxy."+f.field, f.column, v, f.db)
		}
		// The service decides by proxy_hash, the MD5 of the three values.
		if hash := fmt.Sprintf("%x", md5.Sum([]byte(concat))); len(d.out) == before && hash != ie.ProxyHash { // #nosec G401
			d.note(o, "spec.proxy", "infra_envs.proxy_hash", hash, ie.ProxyHash, "the stored hash does not match the stored proxy")
		}
	}
	if ntp := getStrings(o, "spec.additionalNTPSources"); len(ntp) > 0 {
		d.str(o, "spec.additionalNTPSources", "infra_envs.additional_ntp_sources", joinList(ntp), ie.AdditionalNTPSources)
	}
	if ntp := getStrings(o, "spec.ntpSources"); len(ntp) > 0 {
		d.str(o, "spec.ntpSources", "infra_envs.ntp_sources", joinList(ntp), ie.NTPSources)
	}
	// GetInfraEnvIsoImageType: no imageType means full-iso on s390x, else the
	// controller's ISO_IMAGE_TYPE, minimal-iso unless the operator changed it
	// (internal/infraenv/iso_image_type.go; infraenv_controller.go Config).
	imageType := getString(o, "spec.imageType")
	if imageType == "" {
		imageType = DefaultISOImageType
		if getString(o, "spec.cpuArchitecture") == "s390x" {
			imageType = "full-iso"
		}
	}
	d.str(o, "spec.imageType", "infra_envs.type", imageType, ie.Type)
	if v := getString(o, "spec.ignitionConfigOverride"); v != "" {
		d.str(o, "spec.ignitionConfigOverride", "infra_envs.ignition_config_override", v, ie.IgnitionConfigOverride)
	}
	// updateInfraEnv compares the key as it is, an empty one too.
	d.str(o, "spec.sshAuthorizedKey", "infra_envs.ssh_authorized_key", getString(o, "spec.sshAuthorizedKey"), ie.SSHAuthorizedKey)
	d.str(o, "spec.additionalTrustBundle", "infra_envs.additional_trust_bundle",
		strings.TrimSpace(getString(o, "spec.additionalTrustBundle")), ie.AdditionalTrustBundle)
	if v := getString(o, "spec.osImageVersion"); v != "" {
		d.str(o, "spec.osImageVersion", "infra_envs.openshift_version", v, ie.OpenshiftVersion)
	}
	if v := getString(o, "spec.cpuArchitecture"); v != "" {
		d.str(o, "spec.cpuArchitecture", "infra_envs.cpu_architecture", v, ie.CPUArchitecture)
	}
	if delay, ok := getInt(o, "spec.networkDiscoveryDelaySeconds"); ok {
		if ie.NetworkDiscoveryDelaySeconds == nil || *ie.NetworkDiscoveryDelaySeconds != delay {
			var db any
			if ie.NetworkDiscoveryDelaySeconds != nil {
				db = *ie.NetworkDiscoveryDelaySeconds
			}
			d.add(o, "spec.networkDiscoveryDelaySeconds", "infra_envs.network_discovery_delay_seconds", delay, db)
		}
	}
	if ps := getString(o, "spec.pullSecretRef.name"); ps != "" || ie.PullSecret != "" {
		d.pullSecret(o, ns, ps, "infra_envs.pull_secret", ie.PullSecret)
	}
	if err := d.kernelArguments(o, ie); err != nil {
		return err
	}
	if err := d.staticNetwork(o, ie); err != nil {
		return err
	}
	d.mirrorRegistry(o, ie.MirrorRegistryConfiguration, "infra_envs.mirror_registry_configuration")
	return nil
}

// clusterRef checks the InfraEnv is bound to the cluster its row is bound to.
func (d *differ) clusterRef(o *unstructured.Unstructured, ie *InfraEnv) {
	ref := getMap(o, "spec.clusterRef")
	var got string
	if ref != nil {
		ns, _ := ref["namespace"].(string)
		name, _ := ref["name"].(string)
		got = ns + "/" + name
		if c := d.rows.clusterByKubeKey(ns, name); c != nil && c.ID == ie.ClusterID {
			return
		}
	}
	if ref == nil && ie.ClusterID == "" {
		return
	}
	want := ""
	if c := d.rows.cluster(ie.ClusterID); c != nil {
		want = c.KubeKeyNamespace + "/" + c.KubeKeyName
	}
	d.note(o, "spec.clusterRef", "infra_envs.cluster_id", nullIfEmpty(got), nullIfEmpty(want),
		"the InfraEnv and its row are bound to different clusters")
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (d *differ) kernelArguments(o *unstructured.Unstructured, ie *InfraEnv) error {
	db, err := parseKernelArguments(ie.KernelArguments)
	if err != nil {
		return fmt.Errorf("infra-env %s: %w", ie.ID, err)
	}
	var spec []kernelArgument
	for _, k := range getSlice(o, "spec.kernelArguments") {
		km, _ := k.(map[string]any)
		op, _ := km["operation"].(string)
		v, _ := km["value"].(string)
		spec = append(spec, kernelArgument{Operation: op, Value: v})
	}
	if len(spec) == 0 && len(db) == 0 {
		return nil
	}
	if !reflect.DeepEqual(spec, db) {
		d.add(o, "spec.kernelArguments", "infra_envs.kernel_arguments", spec, db)
	}
	return nil
}

// staticNetwork rebuilds what the controller sends from the NMStateConfigs
// its selector finds: the API server's JSON of each config with its MAC map,
// formatted as the service stores it, and compares the two strings.
func (d *differ) staticNetwork(o *unstructured.Unstructured, ie *InfraEnv) error {
	var sel metav1.LabelSelector
	if raw := getMap(o, "spec.nmStateConfigLabelSelector"); raw != nil {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &sel); err != nil {
			return fmt.Errorf("InfraEnv %s/%s: nmStateConfigLabelSelector: %w", o.GetNamespace(), o.GetName(), err)
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return fmt.Errorf("InfraEnv %s/%s: nmStateConfigLabelSelector: %w", o.GetNamespace(), o.GetName(), err)
	}
	var cfgs []hostStaticNetworkConfig
	if !selector.Empty() {
		for _, n := range d.sorted(kindNMState) {
			// The controller lists NMStateConfigs cluster-wide by label.
			if !selector.Matches(labels.Set(n.GetLabels())) {
				continue
			}
			cfg, err := staticConfigOf(n)
			if err != nil {
				return err
			}
			cfgs = append(cfgs, cfg)
		}
	}
	got := formatStaticNetworkConfig(cfgs)
	if got != ie.StaticNetworkConfig {
		d.note(o, "NMStateConfigs(spec.nmStateConfigLabelSelector)", "infra_envs.static_network_config",
			got, ie.StaticNetworkConfig, "the controller would store this static network config and regenerate the ISO")
	}
	return nil
}

func (d *differ) sorted(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for k, o := range d.idx {
		if strings.HasPrefix(k, kind+"/") {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out
}

func staticConfigOf(n *unstructured.Unstructured) (hostStaticNetworkConfig, error) {
	var cfg hostStaticNetworkConfig
	for _, i := range getSlice(n, "spec.interfaces") {
		im, _ := i.(map[string]any)
		name, _ := im["name"].(string)
		mac, _ := im["macAddress"].(string)
		cfg.MacInterfaceMap = append(cfg.MacInterfaceMap, macInterface{LogicalNicName: name, MacAddress: mac})
	}
	if config := get(n, "spec.config"); config != nil {
		raw, err := json.Marshal(config)
		if err != nil {
			return cfg, fmt.Errorf("NMStateConfig %s/%s: spec.config: %w", n.GetNamespace(), n.GetName(), err)
		}
		cfg.NetworkYaml = string(raw)
	}
	return cfg, nil
}

// formatStaticNetworkConfig is the service's FormatStaticNetworkConfigForDB:
// interfaces sorted by name then MAC, hosts by network YAML then interfaces,
// then JSON; no hosts is the empty string.
func formatStaticNetworkConfig(cfgs []hostStaticNetworkConfig) string {
	if len(cfgs) == 0 {
		return ""
	}
	less := func(a, b macInterface) bool {
		if a.LogicalNicName != b.LogicalNicName {
			return a.LogicalNicName < b.LogicalNicName
		}
		return a.MacAddress < b.MacAddress
	}
	for _, c := range cfgs {
		sort.SliceStable(c.MacInterfaceMap, func(i, j int) bool { return less(c.MacInterfaceMap[i], c.MacInterfaceMap[j]) })
	}
	sort.SliceStable(cfgs, func(i, j int) bool {
		a, b := cfgs[i], cfgs[j]
		if a.NetworkYaml != b.NetworkYaml {
			return a.NetworkYaml < b.NetworkYaml
		}
		if len(a.MacInterfaceMap) != len(b.MacInterfaceMap) {
			return len(a.MacInterfaceMap) < len(b.MacInterfaceMap)
		}
		for k := range a.MacInterfaceMap {
			if less(a.MacInterfaceMap[k], b.MacInterfaceMap[k]) || less(b.MacInterfaceMap[k], a.MacInterfaceMap[k]) {
				return less(a.MacInterfaceMap[k], b.MacInterfaceMap[k])
			}
		}
		return false
	})
	b, _ := json.Marshal(cfgs)
	return string(b)
}
