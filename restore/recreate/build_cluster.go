package recreate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// platformTypes maps clusters.platform_type to AgentClusterInstall's
// platformType (the inverse of the controller's getPlatform).
var platformTypes = map[string]string{
	"baremetal": "BareMetal", "none": "None", "vsphere": "VSphere", "nutanix": "Nutanix", "external": "External",
}

// clusterObjects builds the ClusterImageSet, Secrets, ConfigMap,
// ClusterDeployment and AgentClusterInstall of one cluster row. Node 0's
// exported CRs, when the bundle has them, replace what the rows would give.
func (p *plan) clusterObjects(c *Cluster) ([]*unstructured.Unstructured, error) {
	if c.PullSecret == "" {
		return nil, fmt.Errorf("cluster %s has no pull secret (clusters.pull_secret): the controllers cannot reconcile it", c.ID)
	}
	cdName, aciName, ns := p.cd[c.ID], p.aci[c.ID], p.clusterNS[c.ID]
	n0 := p.node0.cluster(c)
	var out []*unstructured.Unstructured

	cis := newObject(hiveV1, kindCIS, "", p.cis[c.ID])
	set(cis, "spec.releaseImage", c.OCPReleaseImage)
	out = append(out, p.from(cis, n0.cis, p.manifests.cis(c.ID)))

	pull := newSecret(ns, p.pull[c.ID], "kubernetes.io/dockerconfigjson", map[string]string{pullSecretKey: c.PullSecret})
	pull.SetLabels(map[string]string{labelWatch: "true"})
	out = append(out, p.from(pull, n0.pull, p.manifests.pullSecret(c.ID)))

	cd := newObject(hiveV1, kindCD, ns, cdName)
	set(cd, "spec.clusterName", c.Name)
	set(cd, "spec.baseDomain", c.BaseDNSDomain)
	set(cd, "spec.clusterInstallRef", m{"group": "extensions.hive.openshift.io", "version": "v1beta1", "kind": kindACI, "name": aciName})
	set(cd, "spec.pullSecretRef", m{"name": p.pull[c.ID]})
	set(cd, "spec.platform.agentBareMetal.agentSelector", p.agentSelector(c.ID))
	if n0.cd == nil && p.manifests.clusterDeployment(c.ID) == nil {
		// Deleting cluster 0's own ClusterDeployment must never deprovision
		// it; with node 0's CR or manifest the restore's plan sets it on
		// cluster 0's own ClusterDeployment only.
		set(cd, "spec.preserveOnDelete", true)
	}
	out = append(out, p.from(cd, n0.cd, p.manifests.clusterDeployment(c.ID)))

	aci, extra, err := p.agentClusterInstall(c, aciName, cdName)
	if err != nil {
		return nil, err
	}
	out = append(out, extra...)
	aci = p.from(aci, n0.aci, p.manifests.agentClusterInstall(c.ID))
	if n0.aci == nil {
		setHold(aci, c)
	}
	out = append(out, aci)
	out = append(out, p.node0.referenced(p, n0.cd, n0.aci)...)
	return out, nil
}

// setHold decides spec.holdInstallation of an AgentClusterInstall that node 0
// did not have as a live CR (ABI's node 0 runs the service without an API and
// starts the installation itself over REST). The ClusterDeployment
// controller's reconcileExistingCluster calls installDay1 for every day-1
// cluster whose ACI is not on hold, and installDay1 starts the installation
// (InstallClusterInternal) as soon as the cluster is ready
// (openshift/assisted-service internal/controller/controllers/
// clusterdeployments_controller.go, reconcileExistingCluster, installDay1,
// isReadyForInstallation, IsHoldInstallationSet). On cluster 0 nothing may start
// an installation: node 0 started it, or, before it did, the user decides.
// So every day-1 cluster that is not installed is held. An installed cluster
// never reaches installDay1 (handleClusterInstalled returns first), and a day-2
// (AddHostsCluster) cluster installs its hosts whatever the hold says, so
// neither gets the field.
func setHold(aci *unstructured.Unstructured, c *Cluster) {
	if c.Kind == "AddHostsCluster" || c.Status == "installed" {
		return
	}
	set(aci, "spec.holdInstallation", true)
}

// agentSelector matches the Agents of the cluster's infra-env, the label every
// re-created Agent carries.
func (p *plan) agentSelector(clusterID string) m {
	for _, ie := range p.rows.InfraEnvs {
		if ie.ClusterID == clusterID {
			return m{"matchLabels": m{LabelInfraEnv: p.infraEnv[ie.ID]}}
		}
	}
	return m{}
}

func (p *plan) agentClusterInstall(c *Cluster, name, cdName string) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	var extra []*unstructured.Unstructured
	ns := p.clusterNS[c.ID]
	aci := newObject(hiveExtV1b1, kindACI, ns, name)
	annotations := map[string]string{}
	if c.InstallConfigOverrides != "" {
		annotations[AnnotationInstallConfigOverrides] = c.InstallConfigOverrides
	}
	for key, v := range map[string]string{
		AnnotationIgnoredClusterValidations: c.IgnoredClusterValidations,
		AnnotationIgnoredHostValidations:    c.IgnoredHostValidations,
	} {
		if v == "" {
			continue
		}
		var ids []string
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return nil, nil, fmt.Errorf("cluster %s: ignored validations are not a JSON list: %w", c.ID, err)
		}
		annotations[key] = strings.Join(ids, ",")
	}
	if len(annotations) > 0 {
		aci.SetAnnotations(annotations)
	}
	if c.Tags != "" && len(validation.IsValidLabelValue(c.Tags)) == 0 {
		aci.SetLabels(map[string]string{LabelClusterConsumer: c.Tags})
	}

	set(aci, "spec.clusterDeploymentRef", m{"name": cdName})
	set(aci, "spec.imageSetRef", m{"name": p.cis[c.ID]})
	set(aci, "spec.networking", networking(c))
	req := m{"controlPlaneAgents": c.ControlPlaneCount}
	if w := p.rows.workerCount(c.ID); w > 0 {
		req["workerAgents"] = w
	}
	set(aci, "spec.provisionRequirements", req)
	if !c.VIPDHCPAllocation {
		// The deprecated single VIPs go along, as ABI writes them: the
		// controller fails when one differs from the first of its list.
		if len(c.APIVIPs) > 0 {
			set(aci, "spec.apiVIP", c.APIVIPs[0])
			set(aci, "spec.apiVIPs", stringsToAny(c.APIVIPs))
		}
		if len(c.IngressVIPs) > 0 {
			set(aci, "spec.ingressVIP", c.IngressVIPs[0])
			set(aci, "spec.ingressVIPs", stringsToAny(c.IngressVIPs))
		}
	}
	if pt, ok := platformTypes[c.PlatformType]; ok {
		set(aci, "spec.platformType", pt)
		if pt == "External" {
			set(aci, "spec.external", m{"platformName": c.PlatformExternalName, "cloudControllerManager": c.PlatformExternalCCM})
		}
	}
	if c.SSHPublicKey != "" {
		set(aci, "spec.sshPublicKey", c.SSHPublicKey)
	}
	if proxy := proxyMap(c.HTTPProxy, c.HTTPSProxy, c.NoProxy); proxy != nil {
		set(aci, "spec.proxy", proxy)
	}
	if c.NTPSources != "" {
		set(aci, "spec.ntpSources", splitList(c.NTPSources))
	}
	if c.SchedulableMasters {
		set(aci, "spec.mastersSchedulable", true)
	}
	setHyperthreading(aci, c.Hyperthreading)
	if de := diskEncryption(c); de != nil {
		set(aci, "spec.diskEncryption", de)
	}
	if c.LoadBalancerType == "user-managed" {
		set(aci, "spec.loadBalancer", m{"type": "UserManaged"})
	}
	if c.IgnitionEndpointURL != nil && *c.IgnitionEndpointURL != "" {
		ep := m{"url": *c.IgnitionEndpointURL}
		if ca := deref(c.IgnitionEndpointCA); ca != "" {
			pem, err := base64.StdEncoding.DecodeString(ca)
			if err != nil {
				return nil, nil, fmt.Errorf("cluster %s: ignition endpoint CA is not base64: %w", c.ID, err)
			}
			secret := p.names.take(kindSecret, ns, cdName+"-ignition-ca", c.ID)
			extra = append(extra, newSecret(ns, secret, "Opaque", map[string]string{"tls.crt": string(pem)}))
			ep["caCertificateReference"] = m{"namespace": ns, "name": secret}
		}
		set(aci, "spec.ignitionEndpoint", ep)
	}
	if cm := p.mirrorConfigMap(c.MirrorRegistryConfiguration, ns, cdName+"-mirror-registry", c.ID); cm != nil {
		extra = append(extra, cm)
		p.mirror[c.ID] = cm.GetName()
		set(aci, "spec.mirrorRegistryRef", m{"name": cm.GetName(), "namespace": ns})
	}
	return aci, extra, nil
}

func networking(c *Cluster) m {
	n := m{"userManagedNetworking": c.UserManagedNetworking}
	if len(c.ClusterNetworks) > 0 {
		var cn []any
		for _, net := range c.ClusterNetworks {
			cn = append(cn, m{"cidr": net.CIDR, "hostPrefix": net.HostPrefix})
		}
		n["clusterNetwork"] = cn
	}
	if len(c.ServiceNetworks) > 0 {
		n["serviceNetwork"] = stringsToAny(c.ServiceNetworks)
	}
	if len(c.MachineNetworks) > 0 {
		var mn []any
		for _, cidr := range c.MachineNetworks {
			mn = append(mn, m{"cidr": cidr})
		}
		n["machineNetwork"] = mn
	}
	if c.NetworkType != "" {
		n["networkType"] = c.NetworkType
	}
	return n
}

func proxyMap(httpProxy, httpsProxy, noProxy string) m {
	if httpProxy == "" && httpsProxy == "" && noProxy == "" {
		return nil
	}
	proxy := m{}
	for k, v := range map[string]string{"httpProxy": httpProxy, "httpsProxy": httpsProxy, "noProxy": noProxy} {
		if v != "" {
			proxy[k] = v
		}
	}
	return proxy
}

// setHyperthreading writes the machine pools whose settings the controller's
// getHyperthreading turns back into clusters.hyperthreading. "all" (the
// service's default) is what no pool at all means.
func setHyperthreading(aci *unstructured.Unstructured, value string) {
	if value == "" || value == "all" {
		return
	}
	enabled := map[string]bool{}
	for _, p := range strings.Split(value, ",") {
		enabled[p] = true
	}
	mode := func(pool string) string {
		if enabled[pool] {
			return "Enabled"
		}
		return "Disabled"
	}
	set(aci, "spec.controlPlane", m{"name": "master", "hyperthreading": mode("masters")})
	set(aci, "spec.compute", []any{m{"name": "worker", "hyperthreading": mode("workers")}})
	if enabled["arbiters"] {
		set(aci, "spec.arbiter", m{"name": "arbiter", "hyperthreading": "Enabled"})
	}
}

func diskEncryption(c *Cluster) m {
	enabled := c.DiskEncryptionEnableOn != "" && c.DiskEncryptionEnableOn != "none"
	if !enabled && c.DiskEncryptionMode != "tang" && c.DiskEncryptionTangServers == "" {
		return nil
	}
	de := m{}
	if c.DiskEncryptionEnableOn != "" {
		de["enableOn"] = c.DiskEncryptionEnableOn
	}
	if c.DiskEncryptionMode != "" {
		de["mode"] = c.DiskEncryptionMode
	}
	if c.DiskEncryptionTangServers != "" {
		de["tangServers"] = c.DiskEncryptionTangServers
	}
	return de
}

// mirrorConfigMap rebuilds the ConfigMap a mirrorRegistryRef points at from the
// registries.conf and CA bundle the service kept in mirror_registry_configuration.
func (p *plan) mirrorConfigMap(config, ns, name, id string) *unstructured.Unstructured {
	if config == "" {
		return nil
	}
	var mr struct {
		RegistriesConf string `json:"registriesConf"`
		CaBundleCrt    string `json:"caBundleCrt"`
	}
	if json.Unmarshal([]byte(config), &mr) != nil || (mr.RegistriesConf == "" && mr.CaBundleCrt == "") {
		return nil
	}
	data := m{}
	if mr.RegistriesConf != "" {
		data[registriesKey] = mr.RegistriesConf
	}
	if mr.CaBundleCrt != "" {
		data[caBundleKey] = mr.CaBundleCrt
	}
	cm := newObject("v1", kindCM, ns, p.names.take(kindCM, ns, name, id))
	cm.Object["data"] = data
	return cm
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
