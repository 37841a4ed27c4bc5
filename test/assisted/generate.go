// Package assisted loads the assisted-service schema (the real pg_dump in
// ../shared/fixtures when present, else the project's own DDL of the same
// tables, harness.AssistedSchemaPath) and fills it with realistic, deterministic data at any
// scale: clusters, infra-envs, hosts with big inventory JSON text, events,
// networks and VIPs with inet/cidr, monitored operators with text[],
// soft-deleted rows, NULL next to empty strings. Data is made by the server
// (generate_series), so a million events take seconds and nothing is cached in
// the repository.
package assisted

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Scale says how much data Generate makes.
type Scale struct {
	// Clusters, each with one infra-env, networks, VIPs and operators.
	Clusters int
	// Hosts in all, spread over the clusters.
	Hosts int
	// Events in all (events_id_seq advances past them).
	Events int
	// InventoryBytes is the approximate size of one host's inventory JSON
	// (not with Wide).
	InventoryBytes int
	// Wide gives every host the wide columns of a real one (generate_wide.go):
	// an inventory of 5 to 30 KB with disks' SMART reports, validations,
	// connectivity to the other hosts of its cluster, DNS resolutions, image
	// pulls, NTP sources, free addresses, all different for each host.
	Wide bool
}

// Small is a scale for functional tests: every kind of row, a few MB.
var Small = Scale{Clusters: 7, Hosts: 40, Events: 3000, InventoryBytes: 6000}

// Bench is the scale `make bench` uses: 50k hosts and a million events.
var Bench = Scale{Clusters: 2000, Hosts: 50000, Events: 1000000, InventoryBytes: 5000}

// WideBench is the scale of `make bench`'s wide-row data: fewer hosts than
// Bench, each as wide as a real one (about 25 KB of JSON in the row), and
// events, about 400 MiB of database in all.
var WideBench = Scale{Clusters: 1500, Hosts: 25000, Events: 500000, Wide: true}

// LoadSchema creates the real assisted-service schema in the database at url.
func LoadSchema(t testing.TB, url string) {
	t.Helper()
	harness.LoadSQLFile(t, url, harness.AssistedSchemaPath())
}

// NewDatabase makes a fresh database on the machine's PostgreSQL with the
// assisted-service schema and data at scale s.
func NewDatabase(t testing.TB, s Scale) *harness.Database {
	t.Helper()
	db := harness.NewDatabase(t)
	LoadSchema(t, db.URL)
	if err := Generate(context.Background(), db.URL, s); err != nil {
		t.Fatalf("generate assisted-service data: %v", err)
	}
	return db
}

// Generate fills the assisted-service tables of the database at url (schema
// already loaded, tables empty) with data at scale s, in one transaction. The
// same scale always gives the same rows.
func Generate(ctx context.Context, url string, s Scale) error {
	if s.Clusters < 1 || s.Hosts < 0 || s.Events < 0 {
		return fmt.Errorf("bad scale %+v", s)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	steps := []struct {
		name string
		sql  string
		args []any
	}{
		{"migrations", migrationsSQL, nil},
		{"release_images", releaseImagesSQL, nil},
		{"clusters", clustersSQL, []any{s.Clusters}},
		{"infra_envs", infraEnvsSQL, []any{s.Clusters}},
		{"cluster_networks", clusterNetworksSQL, []any{s.Clusters}},
		{"service_networks", serviceNetworksSQL, []any{s.Clusters}},
		{"machine_networks", machineNetworksSQL, []any{s.Clusters}},
		{"api_vips", vipsSQL("api_vips", 5), []any{s.Clusters}},
		{"ingress_vips", vipsSQL("ingress_vips", 7), []any{s.Clusters}},
		{"monitored_operators", operatorsSQL, []any{s.Clusters}},
		{"hosts", hostsSQL(s), []any{s.Hosts, s.Clusters}},
		{"events", eventsSQL, []any{s.Events, s.Clusters, max(s.Hosts, 1)}},
	}
	// Bulk loads go faster into bare tables: drop the keys and indexes and
	// build them again at the end, with the server's own definitions.
	rebuild, err := dropKeysAndIndexes(ctx, tx)
	if err != nil {
		return err
	}
	if s.Wide {
		if err := loadWideHosts(ctx, tx, s); err != nil {
			return fmt.Errorf("generate wide hosts: %w", err)
		}
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("generate %s: %w", st.name, err)
		}
	}
	for _, sql := range rebuild {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("generate: rebuild %q: %w", sql, err)
		}
	}
	return tx.Commit(ctx)
}

// dropKeysAndIndexes drops the primary keys, unique constraints and indexes
// of the public tables and returns the statements that recreate them.
func dropKeysAndIndexes(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `
SELECT 'ALTER TABLE ONLY ' || c.conrelid::regclass::text || ' DROP CONSTRAINT ' || quote_ident(c.conname),
       'ALTER TABLE ONLY ' || c.conrelid::regclass::text || ' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
WHERE r.relnamespace = 'public'::regnamespace AND c.contype IN ('p', 'u')
UNION ALL
SELECT 'DROP INDEX ' || i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class r ON r.oid = i.indrelid
WHERE r.relnamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x'))`)
	if err != nil {
		return nil, fmt.Errorf("read keys and indexes: %w", err)
	}
	var drops, creates []string
	var drop, create string
	if _, err := pgx.ForEachRow(rows, []any{&drop, &create}, func() error {
		drops = append(drops, drop)
		creates = append(creates, create)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read keys and indexes: %w", err)
	}
	for _, d := range drops {
		if _, err := tx.Exec(ctx, d); err != nil {
			return nil, fmt.Errorf("generate: %s: %w", d, err)
		}
	}
	if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
		return nil, err
	}
	return creates, nil
}

// Row ids are UUIDs derived from the kind and the row number, so hosts and
// events can point at their cluster without lookups.
const (
	clusterID  = `(md5('cluster-' || %s)::uuid::text)`
	infraEnvID = `(md5('infraenv-' || %s)::uuid::text)`
	hostID     = `(md5('host-' || %s)::uuid::text)`
)

func id(kind, n string) string { return fmt.Sprintf(kind, n) }

const migrationsSQL = `INSERT INTO migrations (id) VALUES
 ('20210713123129'), ('20211125182200'), ('20220325131400'), ('20220620090000'), ('20221031103146'),
 ('20230215120000'), ('20230522152500'), ('20231107100000'), ('20240318143000'), ('20250115120000'),
 ('20250728120000'), ('20251216120000'), ('20251217120000'), ('20260413120000')`

const releaseImagesSQL = `INSERT INTO release_images (cpu_architecture, cpu_architectures, "default", openshift_version, support_level, url, version)
SELECT CASE WHEN g % 3 = 0 THEN 'multi' ELSE 'x86_64' END,
       CASE WHEN g % 3 = 0 THEN ARRAY['x86_64', 'arm64', 'ppc64le', 's390x'] ELSE ARRAY['x86_64'] END,
       g = 1, '4.' || (12 + g), CASE WHEN g < 3 THEN 'production' ELSE 'beta' END,
       'quay.io/openshift-release-dev/ocp-release:4.' || (12 + g) || '.3-x86_64', '4.' || (12 + g) || '.3'
FROM generate_series(1, 8) g`

var clustersSQL = `INSERT INTO clusters (id, name, base_dns_domain, openshift_version, ocp_release_image, cpu_architecture,
    status, status_info, status_updated_at, created_at, updated_at, deleted_at, install_started_at, install_completed_at,
    pull_secret, pull_secret_set, ssh_public_key, validations_info, feature_usage, install_config_overrides, ui_settings,
    kube_key_name, kube_key_namespace, high_availability_mode, control_plane_count, cluster_network_cidr,
    cluster_network_host_prefix, service_network_cidr, machine_network_cidr, network_type, platform_type,
    user_managed_networking, schedulable_masters, vip_dhcp_allocation, progress_total_percentage, primary_ip_stack,
    http_proxy, no_proxy, tags, api_vip_lease, imported, logs_info, load_balancer_type, kind, href, org_id, user_name)
SELECT ` + id(clusterID, "g") + `, 'cluster-' || g, 'example' || (g % 5) || '.com', '4.1' || (g % 8), 
    'quay.io/openshift-release-dev/ocp-release:4.1' || (g % 8) || '.3-x86_64', 'x86_64',
    (ARRAY['installed', 'installing', 'ready', 'insufficient', 'error'])[1 + g % 5],
    CASE g % 5 WHEN 0 THEN 'Cluster is installed' WHEN 4 THEN E'Failed:\n\t"host" timed out \\ retry' ELSE '' END,
    ts + interval '3 hours', ts, ts + interval '5 hours', CASE WHEN g % 10 = 3 THEN ts + interval '2 days' END,
    ts + interval '1 hour', CASE WHEN g % 5 = 0 THEN ts + interval '2 hours' END,
    '{"auths":{"quay.io":{"auth":"' || encode(convert_to('user:' || md5('secret' || g), 'UTF8'), 'base64') || '","email":"u' || g || '@example.com"}}}',
    true, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI' || md5('key' || g) || ' user@host',
    '{"configuration":[{"id":"pull-secret-set","status":"success","message":"The pull secret is set."}],'
      || '"hosts-data":[{"id":"all-hosts-are-ready-to-install","status":"success","message":"All hosts in the cluster are ready to install."}],'
      || '"network":[{"id":"api-vips-defined","status":"success","message":"API virtual IPs are defined."}]}',
    '{"SNO":{"id":"SNO","name":"Single Node OpenShift"},"Hyperthreading":{"id":"HYPERTHREADING","name":"Hyperthreading","data":{"hyperthreading_enabled":"all"}}}',
    CASE g % 3 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE '{"networking":{"networkType":"OVNKubernetes"}}' END,
    CASE WHEN g % 4 = 0 THEN NULL ELSE '' END,
    CASE WHEN g % 2 = 0 THEN 'cluster-' || g ELSE '' END, CASE WHEN g % 2 = 0 THEN 'ns-' || (g % 9) ELSE '' END,
    CASE WHEN g % 4 = 0 THEN 'None' ELSE 'Full' END, CASE WHEN g % 4 = 0 THEN 1 ELSE 3 END,
    '10.128.0.0/14', 23, '172.30.0.0/16', '192.168.' || (g % 256) || '.0/24', 'OVNKubernetes',
    (ARRAY['baremetal', 'none', 'vsphere', 'external'])[1 + g % 4],
    g % 4 = 0, g % 7 = 0, false, (g * 13) % 101, 1 + g % 2,
    CASE WHEN g % 6 = 0 THEN 'http://proxy.example.com:3128' END, CASE WHEN g % 6 = 0 THEN '.cluster.local,10.0.0.0/8' ELSE '' END,
    NULL, '', false, '', 'cluster-managed', 'Cluster', '/api/assisted-install/v2/clusters/' || ` + id(clusterID, "g") + `, '', 'admin'
FROM (SELECT g, timestamptz '2025-01-01 00:00:00+00' + g * interval '37 minutes 13.123456 seconds' AS ts
      FROM generate_series(1, $1) g) s`

var infraEnvsSQL = `INSERT INTO infra_envs (id, cluster_id, name, type, cpu_architecture, created_at, updated_at, expires_at,
    download_url, pull_secret, pull_secret_set, ssh_authorized_key, static_network_config, kernel_arguments, openshift_version,
    image_token_key, generated, generated_at, image_expires_at, kube_key_namespace, proxy_http_proxy, proxy_no_proxy,
    ignition_config_override, kind, href, org_id, user_name, size_bytes)
SELECT ` + id(infraEnvID, "g") + `, ` + id(clusterID, "g") + `, 'cluster-' || g || '_infra-env', 'full-iso', 'x86_64',
    ts, ts + interval '10 minutes', 'infinity', 'https://assisted.example.com/images/' || md5('img' || g) || '?arch=x86_64&type=full-iso',
    '{"auths":{"quay.io":{"auth":"' || md5('ps' || g) || '"}}}', true, 'ssh-rsa AAAAB3' || md5('ie' || g),
    CASE WHEN g % 3 = 0 THEN '[{"network_yaml":"interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n  ipv4:\n    enabled: true\n    dhcp: true\n","mac_interface_map":[{"logical_nic_name":"eth0","mac_address":"52:54:00:' || to_hex(g % 256) || ':00:01"}]}]' ELSE '' END,
    CASE WHEN g % 5 = 0 THEN '[{"operation":"append","value":"rd.debug"}]' END, '4.1' || (g % 8),
    md5('token' || g), true, ts + interval '11 minutes', ts + interval '4 hours', CASE WHEN g % 2 = 0 THEN 'ns-' || (g % 9) ELSE '' END,
    '', '', CASE WHEN g % 7 = 0 THEN '{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,hello%20world"}}]}}' END,
    'InfraEnv', '/api/assisted-install/v2/infra-envs/' || ` + id(infraEnvID, "g") + `, '', 'admin', 1234567890 + g
FROM (SELECT g, timestamptz '2025-01-01 00:05:00+00' + g * interval '37 minutes 13.123456 seconds' AS ts
      FROM generate_series(1, $1) g) s`

var clusterNetworksSQL = `INSERT INTO cluster_networks (cidr, cluster_id, host_prefix)
SELECT '10.128.0.0/14'::cidr, ` + id(clusterID, "g") + `, 23 FROM generate_series(1, $1) g
UNION ALL
SELECT 'fd01::/48'::cidr, ` + id(clusterID, "g") + `, 64 FROM generate_series(1, $1) g WHERE g % 3 = 0`

var serviceNetworksSQL = `INSERT INTO service_networks (cidr, cluster_id)
SELECT '172.30.0.0/16'::cidr, ` + id(clusterID, "g") + ` FROM generate_series(1, $1) g
UNION ALL
SELECT 'fd02::/112'::cidr, ` + id(clusterID, "g") + ` FROM generate_series(1, $1) g WHERE g % 3 = 0`

var machineNetworksSQL = `INSERT INTO machine_networks (cidr, cluster_id)
SELECT ('192.168.' || (g % 256) || '.0/24')::cidr, ` + id(clusterID, "g") + ` FROM generate_series(1, $1) g
UNION ALL
SELECT ('2001:db8:' || to_hex(g % 65536) || '::/64')::cidr, ` + id(clusterID, "g") + ` FROM generate_series(1, $1) g WHERE g % 3 = 0`

func vipsSQL(table string, last int) string {
	return fmt.Sprintf(`INSERT INTO %s (cluster_id, ip, verification)
SELECT `+id(clusterID, "g")+`, ('192.168.' || (g %% 256) || '.%d')::inet,
    CASE g %% 3 WHEN 0 THEN 'succeeded' WHEN 1 THEN 'unverified' END
FROM generate_series(1, $1) g
UNION ALL
SELECT `+id(clusterID, "g")+`, ('2001:db8:' || to_hex(g %% 65536) || '::%d')::inet, 'succeeded' FROM generate_series(1, $1) g WHERE g %% 3 = 0`, table, last, last)
}

var operatorsSQL = `INSERT INTO monitored_operators (bundles, cluster_id, dependency_only, name, namespace, operator_type, properties,
    source_bundles, status, status_info, status_updated_at, subscription_name, timeout_seconds, version)
SELECT CASE o.n WHEN 'lvm' THEN ARRAY['virtualization', 'openshift ai', 'with "quotes"'] WHEN 'console' THEN '{}'::text[] END,
    ` + id(clusterID, "g") + `, o.n = 'lso', o.n, o.ns, CASE WHEN o.n = 'console' THEN 'builtin' ELSE 'olm' END,
    CASE WHEN o.n = 'cnv' THEN '{"disk":"/dev/sdb"}' ELSE '' END,
    CASE WHEN o.n = 'lvm' THEN ARRAY['virtualization', NULL] END,
    CASE WHEN g % 5 = 0 THEN 'available' ELSE '' END, CASE WHEN g % 5 = 0 THEN 'install strategy completed with no errors' END,
    CASE WHEN g % 5 = 0 THEN timestamptz '2025-02-01 00:00:00+00' + g * interval '1 hour' END,
    CASE WHEN o.n = 'console' THEN '' ELSE o.n || '-operator' END, CASE WHEN o.n = 'console' THEN 3600 ELSE 5400 END, ''
FROM generate_series(1, $1) g
CROSS JOIN (VALUES ('console', 'openshift-console'), ('lvm', 'openshift-storage'), ('cnv', 'openshift-cnv'), ('lso', 'openshift-local-storage')) o(n, ns)
WHERE o.n = 'console' OR g % 4 <> 0`
