package recreate

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clusterDeployment makes the ClusterDeployment controller's comparisons
// (updateIfNeeded, updateNetworkParams, applyClusterInstallAnnotations) for
// one ClusterDeployment and its AgentClusterInstall.
func (d *differ) clusterDeployment(cd *unstructured.Unstructured) error {
	ref := getMap(cd, "spec.clusterInstallRef")
	if ref == nil || ref["kind"] != kindACI || ref["group"] != "extensions.hive.openshift.io" {
		return nil // the controller ignores ClusterDeployments of other installers
	}
	ns := cd.GetNamespace()
	c := d.rows.clusterByKubeKey(ns, cd.GetName())
	if c == nil {
		d.note(cd, "(object)", "clusters.kube_key_name", cd.GetName(), nil,
			"no cluster row has this kube key: the controller would register a new cluster with a new ID")
		return nil
	}
	d.markSeen(&d.seen.clusters, c.ID)
	aciName, _ := ref["name"].(string)
	aci := d.lookup(kindACI, ns, aciName)
	if aci == nil {
		d.note(cd, "spec.clusterInstallRef.name", "-", aciName, nil, "the AgentClusterInstall is missing: the controller stops")
		return nil
	}
	if got := getString(aci, "spec.clusterDeploymentRef.name"); got != cd.GetName() {
		d.add(aci, "spec.clusterDeploymentRef.name", "clusters.kube_key_name", got, cd.GetName())
	}

	d.str(cd, "spec.clusterName", "clusters.name", getString(cd, "spec.clusterName"), c.Name)
	d.str(cd, "spec.baseDomain", "clusters.base_dns_domain", getString(cd, "spec.baseDomain"), c.BaseDNSDomain)
	d.pullSecret(cd, ns, getString(cd, "spec.pullSecretRef.name"), "clusters.pull_secret", c.PullSecret)
	d.imageSet(aci, c)
	d.networks(cd, aci, c)
	d.str(aci, "spec.sshPublicKey", "clusters.ssh_public_key", strings.TrimSpace(getString(aci, "spec.sshPublicKey")), c.SSHPublicKey)
	if ntp := getStrings(aci, "spec.ntpSources"); len(ntp) > 0 {
		d.str(aci, "spec.ntpSources", "clusters.ntp_sources", joinList(ntp), c.NTPSources)
	}
	if err := d.ignitionEndpoint(aci, c); err != nil {
		return err
	}
	d.str(aci, "spec.controlPlane/compute/arbiter", "clusters.hyperthreading", hyperthreading(aci), c.Hyperthreading)
	d.platform(aci, c)
	d.diskEncryption(aci, c)
	d.proxy(aci, c)
	if ms, _ := getBool(aci, "spec.mastersSchedulable"); ms != c.SchedulableMasters {
		d.add(aci, "spec.mastersSchedulable", "clusters.schedulable_masters", ms, c.SchedulableMasters)
	}
	if cp, _ := getInt(aci, "spec.provisionRequirements.controlPlaneAgents"); cp != c.ControlPlaneCount {
		d.add(aci, "spec.provisionRequirements.controlPlaneAgents", "clusters.control_plane_count", cp, c.ControlPlaneCount)
	}
	if tag, ok := aci.GetLabels()[LabelClusterConsumer]; ok && tag != c.Tags {
		d.add(aci, "metadata.labels."+LabelClusterConsumer, "clusters.tags", tag, c.Tags)
	}
	if c.Kind != "AddHostsCluster" {
		ico := aci.GetAnnotations()[AnnotationInstallConfigOverrides]
		if ico != c.InstallConfigOverrides {
			d.add(aci, "metadata.annotations."+AnnotationInstallConfigOverrides, "clusters.install_config_overrides",
				redactJSON(ico), redactJSON(c.InstallConfigOverrides))
		}
	}
	d.ignoredValidations(aci, AnnotationIgnoredClusterValidations, "clusters.ignored_cluster_validations", c.IgnoredClusterValidations)
	d.ignoredValidations(aci, AnnotationIgnoredHostValidations, "clusters.ignored_host_validations", c.IgnoredHostValidations)
	d.mirrorRegistry(aci, c.MirrorRegistryConfiguration, "clusters.mirror_registry_configuration")
	return nil
}

func (d *differ) pullSecret(o *unstructured.Unstructured, ns, name, column, db string) {
	s := d.lookup(kindSecret, ns, name)
	if s == nil {
		d.note(o, "spec.pullSecretRef.name", column, name, redact(db), "the referenced Secret is missing")
		return
	}
	v, _ := secretData(s, pullSecretKey)
	d.secret(o, "spec.pullSecretRef(.dockerconfigjson)", column, v, db)
}

func (d *differ) imageSet(aci *unstructured.Unstructured, c *Cluster) {
	name := getString(aci, "spec.imageSetRef.name")
	cis := d.lookup(kindCIS, "", name)
	if cis == nil {
		d.note(aci, "spec.imageSetRef.name", "clusters.ocp_release_image", name, c.OCPReleaseImage,
			"the ClusterImageSet is missing: the controller stops before comparing")
		return
	}
	d.str(aci, "spec.imageSetRef(.releaseImage)", "clusters.ocp_release_image", getString(cis, "spec.releaseImage"), c.OCPReleaseImage)
}

// hyperthreading is the controller's getHyperthreading.
func hyperthreading(aci *unstructured.Unstructured) string {
	cp := getMap(aci, "spec.controlPlane")
	arb := getMap(aci, "spec.arbiter")
	var worker map[string]any
	for _, p := range getSlice(aci, "spec.compute") {
		if pm, ok := p.(map[string]any); ok && pm["name"] == "worker" {
			worker = pm
			break
		}
	}
	if cp == nil && arb == nil && worker == nil {
		return "all"
	}
	var pools []string
	for _, p := range []struct {
		pool  map[string]any
		value string
	}{{cp, "masters"}, {arb, "arbiters"}, {worker, "workers"}} {
		if p.pool != nil && p.pool["hyperthreading"] == "Enabled" {
			pools = append(pools, p.value)
		}
	}
	if len(pools) == 0 {
		return "none"
	}
	return strings.Join(pools, ",")
}

func (d *differ) platform(aci *unstructured.Unstructured, c *Cluster) {
	pt := getString(aci, "spec.platformType")
	if pt == "" || c.PlatformType == "" {
		return
	}
	if pt == "External" && getMap(aci, "spec.external") == nil {
		d.note(aci, "spec.external", "clusters.platform_type", nil, c.PlatformType, "External needs spec.external: the controller fails")
		return
	}
	for dbValue, ptValue := range platformTypes {
		if ptValue == pt && dbValue != c.PlatformType {
			d.add(aci, "spec.platformType", "clusters.platform_type", pt, c.PlatformType)
		}
	}
}

func (d *differ) diskEncryption(aci *unstructured.Unstructured, c *Cluster) {
	de := getMap(aci, "spec.diskEncryption")
	if de == nil {
		return
	}
	enableOn, _ := de["enableOn"].(string)
	mode, _ := de["mode"].(string)
	tang, _ := de["tangServers"].(string)
	if enableOn == "" {
		enableOn = "none"
	}
	if mode == "" {
		mode = "tpmv2"
	}
	d.str(aci, "spec.diskEncryption.enableOn", "clusters.disk_encryption_enable_on", enableOn, c.DiskEncryptionEnableOn)
	d.str(aci, "spec.diskEncryption.mode", "clusters.disk_encryption_mode", mode, c.DiskEncryptionMode)
	d.str(aci, "spec.diskEncryption.tangServers", "clusters.disk_encryption_tang_servers", tang, c.DiskEncryptionTangServers)
}

// proxy: without spec.proxy the controller sends empty proxies along with
// the next update, so a row with a proxy disagrees.
func (d *differ) proxy(aci *unstructured.Unstructured, c *Cluster) {
	p := getMap(aci, "spec.proxy")
	if p == nil {
		if c.HTTPProxy != "" || c.HTTPSProxy != "" || c.NoProxy != "" {
			d.note(aci, "spec.proxy", "clusters.http_proxy/https_proxy/no_proxy", nil,
				proxyMap(c.HTTPProxy, c.HTTPSProxy, c.NoProxy), "unset: the next update would clear the proxy")
		}
		return
	}
	for _, f := range []struct{ field, column, db string }{
		{"httpProxy", "clusters.http_proxy", c.HTTPProxy},
		{"httpsProxy", "clusters.https_proxy", c.HTTPSProxy},
		{"noProxy", "clusters.no_proxy", c.NoProxy},
	} {
		v, _ := p[f.field].(string)
		d.str(aci, "spec.proxy."+f.field, f.column, v, f.db)
	}
}

// ignitionEndpoint compares like updateIgnitionInUpdateParams: the URL and the
// base64 of the CA Secret's tls.crt, where "no CA" is an empty string.
func (d *differ) ignitionEndpoint(aci *unstructured.Unstructured, c *Cluster) error {
	ep := getMap(aci, "spec.ignitionEndpoint")
	if ep == nil {
		if c.IgnitionEndpointURL != nil || c.IgnitionEndpointCA != nil {
			d.note(aci, "spec.ignitionEndpoint", "clusters.ignition_endpoint_url/ca_certificate", nil,
				deref(c.IgnitionEndpointURL), "unset: the controller would clear the ignition endpoint")
		}
		return nil
	}
	url, _ := ep["url"].(string)
	if c.IgnitionEndpointURL == nil || url != *c.IgnitionEndpointURL {
		d.add(aci, "spec.ignitionEndpoint.url", "clusters.ignition_endpoint_url", url, nullable(c.IgnitionEndpointURL))
	}
	ca := ""
	if ref, ok := ep["caCertificateReference"].(map[string]any); ok {
		ns, _ := ref["namespace"].(string)
		name, _ := ref["name"].(string)
		s := d.lookup(kindSecret, ns, name)
		if s == nil {
			d.note(aci, "spec.ignitionEndpoint.caCertificateReference", "clusters.ignition_endpoint_ca_certificate", name, nullable(c.IgnitionEndpointCA), "the referenced Secret is missing")
			return nil
		}
		pem, _ := secretData(s, "tls.crt")
		ca = base64.StdEncoding.EncodeToString([]byte(pem))
	}
	if c.IgnitionEndpointCA == nil || ca != *c.IgnitionEndpointCA {
		d.add(aci, "spec.ignitionEndpoint.caCertificateReference(tls.crt)", "clusters.ignition_endpoint_ca_certificate", ca, nullable(c.IgnitionEndpointCA))
	}
	return nil
}

func nullable(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// ignoredValidations compares like updateIgnoredValidations: the annotation's
// comma list as a JSON array, "" when the annotation is absent.
func (d *differ) ignoredValidations(aci *unstructured.Unstructured, annotation, column, db string) {
	v, ok := aci.GetAnnotations()[annotation]
	want := ""
	if ok {
		var ids []string
		seen := map[string]bool{}
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		want = "[]"
		if len(ids) > 0 {
			b, _ := json.Marshal(ids)
			want = string(b)
		}
	}
	d.str(aci, "metadata.annotations."+annotation, column, want, db)
}

// mirrorRegistry checks the ConfigMap behind mirrorRegistryRef holds the
// registries.conf and CA bundle the row keeps.
func (d *differ) mirrorRegistry(o *unstructured.Unstructured, config, column string) {
	var mr struct {
		RegistriesConf string `json:"registriesConf"`
		CaBundleCrt    string `json:"caBundleCrt"`
	}
	if config != "" {
		_ = json.Unmarshal([]byte(config), &mr)
	}
	ref := getMap(o, "spec.mirrorRegistryRef")
	if ref == nil {
		if mr.RegistriesConf != "" || mr.CaBundleCrt != "" {
			d.note(o, "spec.mirrorRegistryRef", column, nil, "registries.conf", "unset: the mirror configuration would not be passed on")
		}
		return
	}
	ns, _ := ref["namespace"].(string)
	name, _ := ref["name"].(string)
	cm := d.lookup(kindCM, ns, name)
	if cm == nil {
		d.note(o, "spec.mirrorRegistryRef", column, name, nil, "the referenced ConfigMap is missing")
		return
	}
	reg, _ := getMap(cm, "data")[registriesKey].(string)
	ca, _ := getMap(cm, "data")[caBundleKey].(string)
	d.str(o, "spec.mirrorRegistryRef("+registriesKey+")", column+".registriesConf", reg, mr.RegistriesConf)
	d.str(o, "spec.mirrorRegistryRef("+caBundleKey+")", column+".caBundleCrt", ca, mr.CaBundleCrt)
}
