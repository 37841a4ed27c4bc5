package recreate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Querier is what Load reads through: pgx.Tx, *pgx.Conn and *pgxpool.Pool all
// satisfy it, so the restore can read the rows inside its own transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// colKind says how a column is read: NULL-as-zero text, nullable text, boolean
// (NULL is false), integer (NULL is 0) or nullable integer.
type colKind int

const (
	colText colKind = iota
	colTextNull
	colBool
	colInt
	colIntNull
)

type column struct {
	name string
	kind colKind
}

// expr renders a column so a schema that lacks it (an older or newer
// assisted-service) still reads: a missing column reads as NULL.
func (c column) expr(present map[string]bool) string {
	src := "NULL"
	if present[c.name] {
		src = `"` + c.name + `"`
	}
	switch c.kind {
	case colText:
		return "coalesce(" + src + "::text, '')"
	case colBool:
		return "coalesce(" + src + "::boolean, false)"
	case colInt:
		return "coalesce(" + src + "::bigint, 0)"
	case colIntNull:
		return src + "::bigint"
	default:
		return src + "::text"
	}
}

// Load reads the rows the CRs are built from. It reads no events and no other
// large table; inventories are reduced to their disks as they are read.
func Load(ctx context.Context, q Querier) (*Rows, error) {
	cols, err := schemaColumns(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"clusters", "infra_envs", "hosts"} {
		if len(cols[t]) == 0 {
			return nil, fmt.Errorf("read assisted-service rows: table %s not found (is this an assisted-service database?)", t)
		}
	}
	rows := &Rows{}
	if rows.Clusters, err = loadClusters(ctx, q, cols); err != nil {
		return nil, err
	}
	if rows.InfraEnvs, err = loadInfraEnvs(ctx, q, cols["infra_envs"]); err != nil {
		return nil, err
	}
	if rows.Hosts, err = loadHosts(ctx, q, cols["hosts"]); err != nil {
		return nil, err
	}
	return rows, nil
}

func schemaColumns(ctx context.Context, q Querier) (map[string]map[string]bool, error) {
	r, err := q.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema()`)
	if err != nil {
		return nil, fmt.Errorf("read assisted-service schema: %w", err)
	}
	out := map[string]map[string]bool{}
	var t, c string
	_, err = pgx.ForEachRow(r, []any{&t, &c}, func() error {
		if out[t] == nil {
			out[t] = map[string]bool{}
		}
		out[t][c] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read assisted-service schema: %w", err)
	}
	return out, nil
}

func selectList(cols []column, present map[string]bool) string {
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = c.expr(present)
	}
	return strings.Join(exprs, ", ")
}

// scanInto reads rows of cols into one fresh value per row made by next.
func scanInto(r pgx.Rows, next func() []any) error {
	defer r.Close()
	for r.Next() {
		if err := r.Scan(next()...); err != nil {
			return err
		}
	}
	return r.Err()
}

var hostColumns = []column{
	{"id", colText}, {"infra_env_id", colText}, {"cluster_id", colText}, {"kind", colText},
	{"status", colText}, {"role", colText}, {"requested_hostname", colText}, {"approved", colBool},
	{"installation_disk_id", colText}, {"installation_disk_path", colText}, {"installer_args", colText},
	{"ignition_config_overrides", colText}, {"node_labels", colText}, {"machine_config_pool_name", colText},
	{"ignition_endpoint_token", colText}, {"ignition_endpoint_http_headers", colText},
	{"kube_key_namespace", colText},
}

func loadHosts(ctx context.Context, q Querier, present map[string]bool) ([]*Host, error) {
	where := ""
	if present["deleted_at"] {
		where = " WHERE deleted_at IS NULL"
	}
	r, err := q.Query(ctx, "SELECT "+selectList(hostColumns, present)+" FROM hosts"+where+" ORDER BY cluster_id, id")
	if err != nil {
		return nil, fmt.Errorf("read hosts: %w", err)
	}
	var out []*Host
	err = scanInto(r, func() []any {
		h := &Host{}
		out = append(out, h)
		return []any{&h.ID, &h.InfraEnvID, &h.ClusterID, &h.Kind, &h.Status, &h.Role, &h.RequestedHostname,
			&h.Approved, &h.InstallationDiskID, &h.InstallationDiskPath, &h.InstallerArgs,
			&h.IgnitionConfigOverrides, &h.NodeLabels, &h.MachineConfigPoolName, &h.IgnitionEndpointToken,
			&h.IgnitionEndpointHTTPHeaders, &h.KubeKeyNamespace}
	})
	if err != nil {
		return nil, fmt.Errorf("read hosts: %w", err)
	}
	return out, loadHostDisks(ctx, q, present, out)
}

// loadHostDisks reads only the disks of each inventory, one host at a time,
// so memory does not hold every inventory at once.
func loadHostDisks(ctx context.Context, q Querier, present map[string]bool, hosts []*Host) error {
	if !present["inventory"] {
		return nil
	}
	for _, h := range hosts {
		r, err := q.Query(ctx, `SELECT coalesce(inventory, '') FROM hosts WHERE id = $1 AND infra_env_id = $2`, h.ID, h.InfraEnvID)
		if err != nil {
			return fmt.Errorf("read inventory of host %s: %w", h.ID, err)
		}
		var inv string
		if err := scanInto(r, func() []any { return []any{&inv} }); err != nil {
			return fmt.Errorf("read inventory of host %s: %w", h.ID, err)
		}
		var parsed struct {
			Disks []Disk `json:"disks"`
		}
		// An inventory that does not parse has no disks the controller could
		// match either; it is not a reason to stop the restore.
		if inv != "" && json.Unmarshal([]byte(inv), &parsed) == nil {
			h.Disks = parsed.Disks
		}
	}
	return nil
}

var infraEnvColumns = []column{
	{"id", colText}, {"name", colText}, {"cluster_id", colText}, {"type", colText},
	{"cpu_architecture", colText}, {"openshift_version", colText}, {"pull_secret", colText},
	{"ssh_authorized_key", colText}, {"proxy_http_proxy", colText}, {"proxy_https_proxy", colText},
	{"proxy_no_proxy", colText}, {"proxy_hash", colText}, {"additional_ntp_sources", colText},
	{"ntp_sources", colText}, {"ignition_config_override", colText}, {"kernel_arguments", colTextNull},
	{"static_network_config", colText}, {"additional_trust_bundle", colText},
	{"network_discovery_delay_seconds", colIntNull}, {"mirror_registry_configuration", colText},
	{"kube_key_namespace", colText},
}

func loadInfraEnvs(ctx context.Context, q Querier, present map[string]bool) ([]*InfraEnv, error) {
	order := "id"
	if present["created_at"] {
		order = "created_at, id"
	}
	r, err := q.Query(ctx, "SELECT "+selectList(infraEnvColumns, present)+" FROM infra_envs ORDER BY "+order)
	if err != nil {
		return nil, fmt.Errorf("read infra_envs: %w", err)
	}
	var out []*InfraEnv
	err = scanInto(r, func() []any {
		ie := &InfraEnv{}
		out = append(out, ie)
		return []any{&ie.ID, &ie.Name, &ie.ClusterID, &ie.Type, &ie.CPUArchitecture, &ie.OpenshiftVersion,
			&ie.PullSecret, &ie.SSHAuthorizedKey, &ie.ProxyHTTP, &ie.ProxyHTTPS, &ie.ProxyNo, &ie.ProxyHash,
			&ie.AdditionalNTPSources, &ie.NTPSources, &ie.IgnitionConfigOverride, &ie.KernelArguments,
			&ie.StaticNetworkConfig, &ie.AdditionalTrustBundle, &ie.NetworkDiscoveryDelaySeconds,
			&ie.MirrorRegistryConfiguration, &ie.KubeKeyNamespace}
	})
	if err != nil {
		return nil, fmt.Errorf("read infra_envs: %w", err)
	}
	return out, nil
}
