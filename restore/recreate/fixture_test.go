package recreate

const (
	testPullSecret = `{"auths":{"quay.io":{"auth":"c2VjcmV0LXVzZXI6c2VjcmV0LXBhc3M=","email":"x@example.com"}}}`
	testClusterID  = "6c2d8a1e-1d1b-4d51-9e50-3f1f4a8a0001"
	testInfraEnvID = "6c2d8a1e-1d1b-4d51-9e50-3f1f4a8a0002"
	testHostID     = "6c2d8a1e-1d1b-4d51-9e50-3f1f4a8a0010"
	testNetYAML    = `{"dns-resolver":{"config":{"server":["192.168.111.1"]}},"interfaces":[{"ipv4":{"address":[{"ip":"192.168.111.20","prefix-length":24}],"dhcp":false,"enabled":true},"mac-address":"52:54:01:aa:bb:01","name":"eth0","state":"up","type":"ethernet"}]}`
)

// compactRows is a compact cluster as ABI leaves it on node 0: three control
// plane hosts installing, static networking, a proxy, overrides.
func compactRows() *Rows {
	url := "https://ignition.example.com/config"
	ca := "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
	kargs := `[{"operation":"append","value":"rd.net.timeout.carrier=60"}]`
	delay := int64(30)
	c := &Cluster{
		ID: testClusterID, Kind: "Cluster", Name: "ocp", BaseDNSDomain: "example.com",
		OpenshiftVersion: "4.16.3", OCPReleaseImage: "quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64",
		CPUArchitecture: "x86_64", Status: "installing", PullSecret: testPullSecret,
		SSHPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests user@host",
		HTTPProxy:    "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3128", NoProxy: ".example.com,10.0.0.0/8",
		NetworkType: "OVNKubernetes", HighAvailabilityMode: "Full", Hyperthreading: "masters,workers",
		PlatformType: "baremetal", NTPSources: "ntp1.example.com,ntp2.example.com",
		DiskEncryptionEnableOn: "masters", DiskEncryptionMode: "tpmv2",
		IgnitionEndpointURL: &url, IgnitionEndpointCA: &ca,
		InstallConfigOverrides:    `{"fips":true}`,
		IgnoredClusterValidations: `["network-prefix-valid"]`, IgnoredHostValidations: "[]",
		Tags: "team-a", LoadBalancerType: "cluster-managed",
		MirrorRegistryConfiguration: `{"registriesConf":"[[registry]]\nlocation = \"quay.io\"\n","caBundleCrt":"-----BEGIN CERTIFICATE-----\nmirror\n-----END CERTIFICATE-----\n"}`,
		ControlPlaneCount:           3,
		ClusterNetworks:             []ClusterNetwork{{CIDR: "10.128.0.0/14", HostPrefix: 23}},
		ServiceNetworks:             []string{"172.30.0.0/16"},
		MachineNetworks:             []string{"192.168.111.0/24"},
		APIVIPs:                     []string{"192.168.111.5"},
		IngressVIPs:                 []string{"192.168.111.4"},
	}
	ie := &InfraEnv{
		ID: testInfraEnvID, Name: "ocp_infra-env", ClusterID: testClusterID, Type: "full-iso",
		CPUArchitecture: "x86_64", OpenshiftVersion: "4.16", PullSecret: testPullSecret,
		SSHAuthorizedKey: c.SSHPublicKey, ProxyHTTP: c.HTTPProxy, ProxyHTTPS: c.HTTPSProxy, ProxyNo: c.NoProxy,
		ProxyHash:                    "fd3c0ba6c1ad4a41bb9c3fd8e3b9ac4e",
		AdditionalNTPSources:         "ntp1.example.com",
		IgnitionConfigOverride:       `{"ignition":{"version":"3.1.0"}}`,
		KernelArguments:              &kargs,
		StaticNetworkConfig:          `[{"mac_interface_map":[{"logical_nic_name":"eth0","mac_address":"52:54:01:aa:bb:01"}],"network_yaml":"` + jsonEscape(testNetYAML) + `"}]`,
		AdditionalTrustBundle:        "-----BEGIN CERTIFICATE-----\nbundle\n-----END CERTIFICATE-----",
		NetworkDiscoveryDelaySeconds: &delay,
		MirrorRegistryConfiguration:  c.MirrorRegistryConfiguration,
	}
	ie.ProxyHash = md5Hex(ie.ProxyHTTP + ie.ProxyHTTPS + ie.ProxyNo)
	rows := &Rows{Clusters: []*Cluster{c}, InfraEnvs: []*InfraEnv{ie}}
	for i, name := range []string{"master-0", "master-1", "master-2"} {
		id := testHostID[:len(testHostID)-1] + string(rune('0'+i))
		rows.Hosts = append(rows.Hosts, &Host{
			ID: id, InfraEnvID: testInfraEnvID, ClusterID: testClusterID, Kind: "Host", Status: "installing-in-progress",
			Role: "master", RequestedHostname: name, Approved: false,
			InstallationDiskID: "/dev/disk/by-id/wwn-0x" + name, InstallationDiskPath: "/dev/sda",
			InstallerArgs: `["--append-karg","nameserver=8.8.8.8"]`, NodeLabels: `{"zone":"a"}`,
			Disks: []Disk{{ID: "/dev/disk/by-id/wwn-0x" + name, ByPath: "/dev/disk/by-path/pci-0000:00:05.0", Name: "sda", Path: "/dev/sda"},
				{ID: "/dev/disk/by-id/wwn-0xother", ByPath: "/dev/disk/by-path/pci-0000:00:06.0", Name: "sdb", Path: "/dev/sdb"}},
		})
	}
	rows.Hosts[0].IgnitionEndpointToken = "secret-ignition-token"
	rows.Hosts[0].IgnitionEndpointHTTPHeaders = `{"X-Origin":"node0"}`
	return rows
}
