package recreate

import (
	"context"
	"fmt"
	"strings"
)

var clusterColumns = []column{
	{"id", colText}, {"kind", colText}, {"name", colText}, {"base_dns_domain", colText},
	{"openshift_version", colText}, {"ocp_release_image", colText}, {"cpu_architecture", colText},
	{"status", colText}, {"pull_secret", colText}, {"ssh_public_key", colText}, {"http_proxy", colText},
	{"https_proxy", colText}, {"no_proxy", colText}, {"network_type", colText},
	{"high_availability_mode", colText}, {"hyperthreading", colText}, {"platform_type", colText},
	{"platform_external_platform_name", colText}, {"platform_external_cloud_controller_manager", colText},
	{"ntp_sources", colText}, {"disk_encryption_enable_on", colText}, {"disk_encryption_mode", colText},
	{"disk_encryption_tang_servers", colText}, {"ignition_endpoint_url", colTextNull},
	{"ignition_endpoint_ca_certificate", colTextNull}, {"install_config_overrides", colText},
	{"ignored_cluster_validations", colText}, {"ignored_host_validations", colText}, {"tags", colText},
	{"load_balancer_type", colText}, {"mirror_registry_configuration", colText},
	{"user_managed_networking", colBool}, {"vip_dhcp_allocation", colBool}, {"schedulable_masters", colBool},
	{"control_plane_count", colInt}, {"kube_key_name", colText}, {"kube_key_namespace", colText},
}

func loadClusters(ctx context.Context, q Querier, cols map[string]map[string]bool) ([]*Cluster, error) {
	present := cols["clusters"]
	where, order := "", "id"
	if present["deleted_at"] {
		where = " WHERE deleted_at IS NULL"
	}
	if present["created_at"] {
		order = "created_at, id"
	}
	r, err := q.Query(ctx, "SELECT "+selectList(clusterColumns, present)+" FROM clusters"+where+" ORDER BY "+order)
	if err != nil {
		return nil, fmt.Errorf("read clusters: %w", err)
	}
	var out []*Cluster
	err = scanInto(r, func() []any {
		c := &Cluster{}
		out = append(out, c)
		return []any{&c.ID, &c.Kind, &c.Name, &c.BaseDNSDomain, &c.OpenshiftVersion, &c.OCPReleaseImage,
			&c.CPUArchitecture, &c.Status, &c.PullSecret, &c.SSHPublicKey, &c.HTTPProxy, &c.HTTPSProxy,
			&c.NoProxy, &c.NetworkType, &c.HighAvailabilityMode, &c.Hyperthreading, &c.PlatformType,
			&c.PlatformExternalName, &c.PlatformExternalCCM, &c.NTPSources, &c.DiskEncryptionEnableOn,
			&c.DiskEncryptionMode, &c.DiskEncryptionTangServers, &c.IgnitionEndpointURL, &c.IgnitionEndpointCA,
			&c.InstallConfigOverrides, &c.IgnoredClusterValidations, &c.IgnoredHostValidations, &c.Tags,
			&c.LoadBalancerType, &c.MirrorRegistryConfiguration, &c.UserManagedNetworking,
			&c.VIPDHCPAllocation, &c.SchedulableMasters, &c.ControlPlaneCount, &c.KubeKeyName,
			&c.KubeKeyNamespace}
	})
	if err != nil {
		return nil, fmt.Errorf("read clusters: %w", err)
	}
	for _, c := range out {
		if err := loadNetworks(ctx, q, cols, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// familyOrder is the ordering assisted-service applies whenever it loads a
// cluster's networks or VIPs: rows of the cluster's primary IP stack first
// (common.OrderByIPFamily). Older schemas without primary_ip_stack had no order.
func familyOrder(cols map[string]map[string]bool, table, column string) string {
	if !cols["clusters"]["primary_ip_stack"] {
		return ""
	}
	return fmt.Sprintf("CASE WHEN clusters.primary_ip_stack = family(%s.%s::inet) THEN 0 ELSE 1 END ASC", table, column)
}

// orderBy joins the non-empty ordering terms into an ORDER BY clause.
func orderBy(terms ...string) string {
	var kept []string
	for _, t := range terms {
		if t != "" {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return " ORDER BY " + strings.Join(kept, ", ")
}

// bootstrapOrder puts the machine network holding the bootstrap host's address
// first, as assisted-service does (common.OrderByBootstrapNetwork) because
// cluster-etcd-operator relies on it.
const bootstrapOrder = `CASE WHEN EXISTS (
	SELECT 1 FROM hosts bh,
		jsonb_array_elements(bh.inventory::jsonb->'interfaces') AS nic,
		jsonb_array_elements_text(CASE WHEN family(machine_networks.cidr::inet) = 4
			THEN coalesce(nullif(nic->'ipv4_addresses', 'null'::jsonb), '[]'::jsonb)
			ELSE coalesce(nullif(nic->'ipv6_addresses', 'null'::jsonb), '[]'::jsonb) END) AS addr
	WHERE bh.cluster_id = machine_networks.cluster_id AND bh.bootstrap = true AND bh.deleted_at IS NULL
		AND bh.inventory IS NOT NULL AND bh.inventory != ''
		AND host(addr::inet)::inet << machine_networks.cidr::cidr
) THEN 0 ELSE 1 END ASC`

func loadNetworks(ctx context.Context, q Querier, cols map[string]map[string]bool, c *Cluster) error {
	var err error
	if c.ServiceNetworks, err = readStrings(ctx, q, cols, "service_networks", "cidr", "", c.ID); err != nil {
		return err
	}
	bootstrap := ""
	if len(cols["hosts"]) > 0 && cols["hosts"]["bootstrap"] && cols["hosts"]["inventory"] && cols["hosts"]["deleted_at"] {
		bootstrap = bootstrapOrder
	}
	if c.MachineNetworks, err = readStrings(ctx, q, cols, "machine_networks", "cidr", bootstrap, c.ID); err != nil {
		return err
	}
	if c.APIVIPs, err = readStrings(ctx, q, cols, "api_vips", "ip", "", c.ID); err != nil {
		return err
	}
	if c.IngressVIPs, err = readStrings(ctx, q, cols, "ingress_vips", "ip", "", c.ID); err != nil {
		return err
	}
	if len(cols["cluster_networks"]) == 0 {
		return nil
	}
	r, err := q.Query(ctx, "SELECT format('%s', cluster_networks.cidr), coalesce(cluster_networks.host_prefix, 0)"+
		" FROM cluster_networks INNER JOIN clusters ON clusters.id = cluster_networks.cluster_id"+
		" WHERE cluster_networks.cluster_id = $1"+orderBy(familyOrder(cols, "cluster_networks", "cidr")), c.ID)
	if err != nil {
		return fmt.Errorf("read cluster_networks of cluster %s: %w", c.ID, err)
	}
	err = scanInto(r, func() []any {
		c.ClusterNetworks = append(c.ClusterNetworks, ClusterNetwork{})
		n := &c.ClusterNetworks[len(c.ClusterNetworks)-1]
		return []any{&n.CIDR, &n.HostPrefix}
	})
	if err != nil {
		return fmt.Errorf("read cluster_networks of cluster %s: %w", c.ID, err)
	}
	return nil
}

// readStrings reads one column of a cluster's network or VIP table in the
// order assisted-service loads it. format('%s') gives the type's own output
// form (an inet host address without /32), which is what the service reads.
func readStrings(ctx context.Context, q Querier, cols map[string]map[string]bool, table, column, extraOrder, clusterID string) ([]string, error) {
	if len(cols[table]) == 0 {
		return nil, nil
	}
	// Older services ordered neither by family nor by bootstrap network.
	order := ""
	if family := familyOrder(cols, table, column); family != "" {
		order = orderBy(family, extraOrder)
	}
	r, err := q.Query(ctx, "SELECT format('%s', "+table+"."+column+")"+
		" FROM "+table+" INNER JOIN clusters ON clusters.id = "+table+".cluster_id"+
		" WHERE "+table+".cluster_id = $1"+order, clusterID)
	if err != nil {
		return nil, fmt.Errorf("read %s of cluster %s: %w", table, clusterID, err)
	}
	var out []string
	err = scanInto(r, func() []any {
		out = append(out, "")
		return []any{&out[len(out)-1]}
	})
	if err != nil {
		return nil, fmt.Errorf("read %s of cluster %s: %w", table, clusterID, err)
	}
	return out, nil
}
