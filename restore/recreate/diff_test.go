package recreate

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDiffOneColumn changes one column after the objects were built and
// expects exactly the one difference the controller would act on.
func TestDiffOneColumn(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		change func(*Rows)
		kind   string
		field  string
		column string
	}{
		{"cluster name", func(r *Rows) { r.Clusters[0].Name = "other" }, kindCD, "spec.clusterName", "clusters.name"},
		{"base domain", func(r *Rows) { r.Clusters[0].BaseDNSDomain = "example.org" }, kindCD, "spec.baseDomain", "clusters.base_dns_domain"},
		{"cluster pull secret", func(r *Rows) { r.Clusters[0].PullSecret = `{"auths":{}}` }, kindCD, "spec.pullSecretRef(.dockerconfigjson)", "clusters.pull_secret"},
		{"release image", func(r *Rows) { r.Clusters[0].OCPReleaseImage = "quay.io/x:4.17" }, kindACI, "spec.imageSetRef(.releaseImage)", "clusters.ocp_release_image"},
		{"cluster network", func(r *Rows) { r.Clusters[0].ClusterNetworks[0].HostPrefix = 24 }, kindACI, "spec.networking.clusterNetwork", "cluster_networks"},
		{"service network", func(r *Rows) { r.Clusters[0].ServiceNetworks = []string{"172.31.0.0/16"} }, kindACI, "spec.networking.serviceNetwork", "service_networks"},
		{"machine network order", func(r *Rows) {
			r.Clusters[0].MachineNetworks = []string{"192.168.111.0/24", "fd00::/64"}
		}, kindACI, "spec.networking.machineNetwork", "machine_networks"},
		{"network type", func(r *Rows) { r.Clusters[0].NetworkType = "OpenShiftSDN" }, kindACI, "spec.networking.networkType", "clusters.network_type"},
		{"api vip", func(r *Rows) { r.Clusters[0].APIVIPs = []string{"192.168.111.6"} }, kindACI, "spec.apiVIPs", "api_vips"},
		{"ingress vip", func(r *Rows) { r.Clusters[0].IngressVIPs = []string{"192.168.111.7"} }, kindACI, "spec.ingressVIPs", "ingress_vips"},
		{"user managed networking", func(r *Rows) { r.Clusters[0].UserManagedNetworking = true }, kindACI, "spec.networking.userManagedNetworking", "clusters.user_managed_networking"},
		{"load balancer", func(r *Rows) { r.Clusters[0].LoadBalancerType = "user-managed" }, kindACI, "", ""},
		{"ssh key", func(r *Rows) { r.Clusters[0].SSHPublicKey = "ssh-rsa AAAA other" }, kindACI, "spec.sshPublicKey", "clusters.ssh_public_key"},
		{"ntp", func(r *Rows) { r.Clusters[0].NTPSources = "ntp3.example.com" }, kindACI, "spec.ntpSources", "clusters.ntp_sources"},
		{"ignition endpoint url", func(r *Rows) { r.Clusters[0].IgnitionEndpointURL = str("https://other") }, kindACI, "spec.ignitionEndpoint.url", "clusters.ignition_endpoint_url"},
		{"ignition endpoint ca", func(r *Rows) { r.Clusters[0].IgnitionEndpointCA = str("b3RoZXI=") }, kindACI, "spec.ignitionEndpoint.caCertificateReference(tls.crt)", "clusters.ignition_endpoint_ca_certificate"},
		{"hyperthreading", func(r *Rows) { r.Clusters[0].Hyperthreading = "all" }, kindACI, "spec.controlPlane/compute/arbiter", "clusters.hyperthreading"},
		{"platform", func(r *Rows) { r.Clusters[0].PlatformType = "none" }, kindACI, "spec.platformType", "clusters.platform_type"},
		{"disk encryption", func(r *Rows) { r.Clusters[0].DiskEncryptionEnableOn = "all" }, kindACI, "spec.diskEncryption.enableOn", "clusters.disk_encryption_enable_on"},
		{"tang servers", func(r *Rows) { r.Clusters[0].DiskEncryptionTangServers = `[{"url":"http://tang"}]` }, kindACI, "spec.diskEncryption.tangServers", "clusters.disk_encryption_tang_servers"},
		{"http proxy", func(r *Rows) { r.Clusters[0].HTTPProxy = "http://other:3128" }, kindACI, "spec.proxy.httpProxy", "clusters.http_proxy"},
		{"no proxy", func(r *Rows) { r.Clusters[0].NoProxy = "" }, kindACI, "spec.proxy.noProxy", "clusters.no_proxy"},
		{"schedulable masters", func(r *Rows) { r.Clusters[0].SchedulableMasters = true }, kindACI, "spec.mastersSchedulable", "clusters.schedulable_masters"},
		{"control plane count", func(r *Rows) { r.Clusters[0].ControlPlaneCount = 5 }, kindACI, "spec.provisionRequirements.controlPlaneAgents", "clusters.control_plane_count"},
		{"tags", func(r *Rows) { r.Clusters[0].Tags = "team-b" }, kindACI, "metadata.labels." + LabelClusterConsumer, "clusters.tags"},
		{"install config overrides", func(r *Rows) { r.Clusters[0].InstallConfigOverrides = `{"fips":false}` }, kindACI, "metadata.annotations." + AnnotationInstallConfigOverrides, "clusters.install_config_overrides"},
		{"ignored cluster validations", func(r *Rows) { r.Clusters[0].IgnoredClusterValidations = `["all"]` }, kindACI, "metadata.annotations." + AnnotationIgnoredClusterValidations, "clusters.ignored_cluster_validations"},
		{"ignored host validations", func(r *Rows) { r.Clusters[0].IgnoredHostValidations = "" }, kindACI, "metadata.annotations." + AnnotationIgnoredHostValidations, "clusters.ignored_host_validations"},
		{"cluster mirror", func(r *Rows) {
			r.Clusters[0].MirrorRegistryConfiguration = strings.Replace(r.Clusters[0].MirrorRegistryConfiguration, "quay.io", "mirror.local", 1)
		}, kindACI, "spec.mirrorRegistryRef(registries.conf)", "clusters.mirror_registry_configuration.registriesConf"},

		{"infra-env cluster", func(r *Rows) { r.InfraEnvs[0].ClusterID = "" }, kindInfraEnv, "spec.clusterRef", "infra_envs.cluster_id"},
		{"infra-env pull secret", func(r *Rows) { r.InfraEnvs[0].PullSecret = `{"auths":{}}` }, kindInfraEnv, "spec.pullSecretRef(.dockerconfigjson)", "infra_envs.pull_secret"},
		{"infra-env proxy", func(r *Rows) { r.InfraEnvs[0].ProxyHTTPS = "http://other" }, kindInfraEnv, "spec.proxy.httpsProxy", "infra_envs.proxy_https_proxy"},
		{"infra-env proxy hash", func(r *Rows) { r.InfraEnvs[0].ProxyHash = "0" }, kindInfraEnv, "spec.proxy", "infra_envs.proxy_hash"},
		{"infra-env ntp", func(r *Rows) { r.InfraEnvs[0].AdditionalNTPSources = "pool.ntp.org" }, kindInfraEnv, "spec.additionalNTPSources", "infra_envs.additional_ntp_sources"},
		{"image type", func(r *Rows) { r.InfraEnvs[0].Type = "minimal-iso" }, kindInfraEnv, "spec.imageType", "infra_envs.type"},
		{"ignition override", func(r *Rows) { r.InfraEnvs[0].IgnitionConfigOverride = `{}` }, kindInfraEnv, "spec.ignitionConfigOverride", "infra_envs.ignition_config_override"},
		{"ssh authorized key", func(r *Rows) { r.InfraEnvs[0].SSHAuthorizedKey = "ssh-rsa other" }, kindInfraEnv, "spec.sshAuthorizedKey", "infra_envs.ssh_authorized_key"},
		{"trust bundle", func(r *Rows) { r.InfraEnvs[0].AdditionalTrustBundle = "" }, kindInfraEnv, "spec.additionalTrustBundle", "infra_envs.additional_trust_bundle"},
		{"cpu architecture", func(r *Rows) { r.InfraEnvs[0].CPUArchitecture = "arm64" }, kindInfraEnv, "spec.cpuArchitecture", "infra_envs.cpu_architecture"},
		{"discovery delay", func(r *Rows) { r.InfraEnvs[0].NetworkDiscoveryDelaySeconds = nil }, kindInfraEnv, "spec.networkDiscoveryDelaySeconds", "infra_envs.network_discovery_delay_seconds"},
		{"kernel arguments", func(r *Rows) { r.InfraEnvs[0].KernelArguments = nil }, kindInfraEnv, "spec.kernelArguments", "infra_envs.kernel_arguments"},
		{"static network", func(r *Rows) {
			r.InfraEnvs[0].StaticNetworkConfig = strings.Replace(r.InfraEnvs[0].StaticNetworkConfig, "192.168.111.20", "192.168.111.21", 1)
		}, kindInfraEnv, "NMStateConfigs(spec.nmStateConfigLabelSelector)", "infra_envs.static_network_config"},
		{"infra-env mirror", func(r *Rows) {
			r.InfraEnvs[0].MirrorRegistryConfiguration = strings.Replace(r.InfraEnvs[0].MirrorRegistryConfiguration, "quay.io", "mirror.local", 1)
		}, kindInfraEnv, "spec.mirrorRegistryRef(registries.conf)", "infra_envs.mirror_registry_configuration.registriesConf"},

		{"host binding", func(r *Rows) { r.Hosts[1].ClusterID = "" }, kindAgent, "spec.clusterDeploymentName", "hosts.cluster_id"},
		{"installer args", func(r *Rows) { r.Hosts[1].InstallerArgs = `[]` }, kindAgent, "spec.installerArgs", "hosts.installer_args"},
		{"host ignition", func(r *Rows) { r.Hosts[1].IgnitionConfigOverrides = `{"ignition":{}}` }, kindAgent, "spec.ignitionConfigOverrides", "hosts.ignition_config_overrides"},
		{"node labels", func(r *Rows) { r.Hosts[1].NodeLabels = `{"zone":"b"}` }, kindAgent, "spec.nodeLabels", "hosts.node_labels"},
		{"hostname", func(r *Rows) { r.Hosts[1].RequestedHostname = "renamed" }, kindAgent, "spec.hostname", "hosts.requested_hostname"},
		{"role", func(r *Rows) { r.Hosts[1].Role = "worker" }, kindAgent, "spec.role", "hosts.role"},
		{"installation disk", func(r *Rows) {
			r.Hosts[1].InstallationDiskID, r.Hosts[1].InstallationDiskPath = "/dev/disk/by-id/wwn-0xother", "/dev/sdb"
		}, kindAgent, "spec.installation_disk_id", "hosts.installation_disk_id"},
		{"ignition token", func(r *Rows) { r.Hosts[0].IgnitionEndpointToken = "other" }, kindAgent, "spec.ignitionEndpointTokenReference(ignition-token)", "hosts.ignition_endpoint_token"},
		{"ignition headers", func(r *Rows) { r.Hosts[0].IgnitionEndpointHTTPHeaders = "" }, kindAgent, "spec.ignitionEndpointHTTPHeaders", "hosts.ignition_endpoint_http_headers"},
		{"approved", func(r *Rows) { r.Hosts[1].Approved = true }, kindAgent, "spec.approved", "hosts.approved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := FromRows(compactRows(), Options{Namespace: "cluster0"})
			if err != nil {
				t.Fatal(err)
			}
			tt.change(res.Rows)
			diffs, err := Diff(res.Objects, res.Rows)
			if err != nil {
				t.Fatal(err)
			}
			if tt.field == "" {
				// Fields the controller does not compare when the spec leaves them out.
				if len(diffs) != 0 {
					t.Fatalf("want no difference, got %v", diffs)
				}
				return
			}
			if len(diffs) != 1 {
				t.Fatalf("want one difference, got %d: %v", len(diffs), diffs)
			}
			d := diffs[0]
			if d.Kind != tt.kind || d.Field != tt.field || d.Column != tt.column {
				t.Fatalf("got %s %s / %s, want %s %s / %s", d.Kind, d.Field, d.Column, tt.kind, tt.field, tt.column)
			}
			if ExitCode(diffs, nil) != 1 {
				t.Error("a difference must exit 1")
			}
		})
	}
}

func TestDiffMissingObjects(t *testing.T) {
	res, err := FromRows(compactRows(), Options{Namespace: "cluster0"})
	if err != nil {
		t.Fatal(err)
	}
	var kept []*unstructured.Unstructured
	for _, o := range res.Objects {
		if o.GetKind() != kindAgent || o.GetName() != res.Rows.Hosts[2].ID {
			kept = append(kept, o)
		}
	}
	diffs, err := Diff(kept, res.Rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 || diffs[0].Field != "(object)" || diffs[0].Name != res.Rows.Hosts[2].ID {
		t.Fatalf("diffs = %v", diffs)
	}

	// Rows without kube keys: every object points at nothing.
	bare := compactRows()
	diffs, err = Diff(res.Objects, bare)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2*(1+1+3) { // each object without a row, each row without an object
		t.Fatalf("want %d differences for rows without kube keys, got %d: %v", 10, len(diffs), diffs)
	}
}

// TestDiffRedactsSecrets plants secrets that differ and checks neither the
// text nor the JSON form of the differences carries them.
func TestDiffRedactsSecrets(t *testing.T) {
	res, err := FromRows(compactRows(), Options{Namespace: "cluster0"})
	if err != nil {
		t.Fatal(err)
	}
	plantedPull := `{"auths":{"x":{"auth":"cGxhbnRlZC1wdWxsLXNlY3JldA=="}}}`
	res.Rows.Clusters[0].PullSecret = plantedPull
	res.Rows.InfraEnvs[0].PullSecret = plantedPull
	res.Rows.Hosts[0].IgnitionEndpointToken = "planted-ignition-token"
	res.Rows.Clusters[0].InstallConfigOverrides = `{"platform":{"vsphere":{"password":"planted-password"}}}`
	diffs, err := Diff(res.Objects, res.Rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 4 {
		t.Fatalf("want 4 differences, got %v", diffs)
	}
	js, _ := json.Marshal(diffs)
	var text strings.Builder
	for _, d := range diffs {
		text.WriteString(d.String() + "\n")
	}
	for _, out := range []string{string(js), text.String()} {
		for _, secret := range []string{"cGxhbnRlZC1wdWxsLXNlY3JldA", "c2VjcmV0LXVzZXI", "planted-ignition-token", "secret-ignition-token", "planted-password"} {
			if strings.Contains(out, secret) {
				t.Errorf("output carries secret %q:\n%s", secret, out)
			}
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("output does not say it redacted:\n%s", out)
		}
	}
}

func TestExitCode(t *testing.T) {
	if ExitCode(nil, nil) != 0 || ExitCode([]Difference{{}}, nil) != 1 || ExitCode(nil, errNoTest) != 2 {
		t.Fatal("exit codes must follow diff(1): 0, 1, 2")
	}
}

var errNoTest = json.Unmarshal([]byte("{"), &struct{}{})

func TestDifferenceJSONIsStable(t *testing.T) {
	d := Difference{Kind: kindACI, Namespace: "ns", Name: "c", Field: "spec.apiVIPs", Against: AgainstDatabase, Column: "api_vips",
		Object: []string{"1.2.3.4"}, Database: []string{"1.2.3.5"}}
	b, _ := json.Marshal(d)
	want := `{"kind":"AgentClusterInstall","namespace":"ns","name":"c","field":"spec.apiVIPs","against":"database","column":"api_vips","object":["1.2.3.4"],"database":["1.2.3.5"]}`
	if string(b) != want {
		t.Fatalf("json = %s\nwant   %s", b, want)
	}
	if got := d.String(); got != `AgentClusterInstall ns/c: spec.apiVIPs ["1.2.3.4"], database api_vips ["1.2.3.5"]` {
		t.Fatalf("text = %s", got)
	}
}
