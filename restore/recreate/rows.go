package recreate

// Rows are the assisted-service rows the CRs are built from and compared with:
// the clusters, infra-envs and hosts that are not soft-deleted, with the
// network and VIP lists in the order assisted-service loads them.
//
// Rows hold secrets (pull secrets, ignition tokens); never print them.
type Rows struct {
	Clusters  []*Cluster
	InfraEnvs []*InfraEnv
	Hosts     []*Host
}

// Cluster is one row of the clusters table with its network and VIP rows.
type Cluster struct {
	ID                   string
	Kind                 string
	Name                 string
	BaseDNSDomain        string
	OpenshiftVersion     string
	OCPReleaseImage      string
	CPUArchitecture      string
	Status               string
	PullSecret           string
	SSHPublicKey         string
	HTTPProxy            string
	HTTPSProxy           string
	NoProxy              string
	NetworkType          string
	HighAvailabilityMode string
	Hyperthreading       string
	PlatformType         string
	// PlatformExternalName and PlatformExternalCCM are platform_external_*.
	PlatformExternalName      string
	PlatformExternalCCM       string
	NTPSources                string
	DiskEncryptionEnableOn    string
	DiskEncryptionMode        string
	DiskEncryptionTangServers string
	// IgnitionEndpointURL and IgnitionEndpointCA are nil when the column is NULL;
	// the CA is base64 of the PEM, as the controller stores it.
	IgnitionEndpointURL         *string
	IgnitionEndpointCA          *string
	InstallConfigOverrides      string
	IgnoredClusterValidations   string
	IgnoredHostValidations      string
	Tags                        string
	LoadBalancerType            string
	MirrorRegistryConfiguration string
	UserManagedNetworking       bool
	VIPDHCPAllocation           bool
	SchedulableMasters          bool
	ControlPlaneCount           int64
	KubeKeyName                 string
	KubeKeyNamespace            string

	ClusterNetworks []ClusterNetwork
	ServiceNetworks []string
	MachineNetworks []string
	APIVIPs         []string
	IngressVIPs     []string
}

// ClusterNetwork is one row of cluster_networks.
type ClusterNetwork struct {
	CIDR       string
	HostPrefix int64
}

// InfraEnv is one row of the infra_envs table.
type InfraEnv struct {
	ID                     string
	Name                   string
	ClusterID              string
	Type                   string
	CPUArchitecture        string
	OpenshiftVersion       string
	PullSecret             string
	SSHAuthorizedKey       string
	ProxyHTTP              string
	ProxyHTTPS             string
	ProxyNo                string
	ProxyHash              string
	AdditionalNTPSources   string
	NTPSources             string
	IgnitionConfigOverride string
	// KernelArguments is the JSON array the service stores, nil for NULL.
	KernelArguments *string
	// StaticNetworkConfig is the JSON list of {mac_interface_map, network_yaml}
	// the service stores (sorted, see FormatStaticNetworkConfigForDB upstream).
	StaticNetworkConfig          string
	AdditionalTrustBundle        string
	NetworkDiscoveryDelaySeconds *int64
	MirrorRegistryConfiguration  string
	KubeKeyNamespace             string
}

// Host is one row of the hosts table.
type Host struct {
	ID                          string
	InfraEnvID                  string
	ClusterID                   string
	Kind                        string
	Status                      string
	Role                        string
	RequestedHostname           string
	Approved                    bool
	InstallationDiskID          string
	InstallationDiskPath        string
	InstallerArgs               string
	IgnitionConfigOverrides     string
	NodeLabels                  string
	MachineConfigPoolName       string
	IgnitionEndpointToken       string
	IgnitionEndpointHTTPHeaders string
	KubeKeyNamespace            string
	// Disks are the disks of the host's inventory, for the installation-disk
	// comparison the Agent controller makes.
	Disks []Disk
}

// Disk is the part of an inventory disk that identifies it.
type Disk struct {
	ID     string `json:"id"`
	ByPath string `json:"by_path"`
	Name   string `json:"name"`
	Path   string `json:"path"`
}

func (r *Rows) cluster(id string) *Cluster {
	for _, c := range r.Clusters {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (r *Rows) infraEnv(id string) *InfraEnv {
	for _, ie := range r.InfraEnvs {
		if ie.ID == id {
			return ie
		}
	}
	return nil
}

// clusterByKubeKey finds a cluster the way the controllers do: by kube key.
func (r *Rows) clusterByKubeKey(ns, name string) *Cluster {
	for _, c := range r.Clusters {
		if c.KubeKeyName == name && c.KubeKeyNamespace == ns {
			return c
		}
	}
	return nil
}

func (r *Rows) infraEnvByKubeKey(ns, name string) *InfraEnv {
	for _, ie := range r.InfraEnvs {
		if ie.Name == name && ie.KubeKeyNamespace == ns {
			return ie
		}
	}
	return nil
}

func (r *Rows) hostByKubeKey(ns, id string) *Host {
	for _, h := range r.Hosts {
		if h.ID == id && h.KubeKeyNamespace == ns {
			return h
		}
	}
	return nil
}

func (r *Rows) workerCount(clusterID string) int64 {
	var n int64
	for _, h := range r.Hosts {
		if h.ClusterID == clusterID && h.Role == "worker" {
			n++
		}
	}
	return n
}
