// Package assisted writes realistic assisted-service data into a real
// database with the real schema, for tests of the bundle and restore paths.
//
// The scenario files (scenario*.go) describe clusters the way node 0 holds
// them after the agent-based installer registered them: the install manifests
// (ClusterDeployment, AgentClusterInstall, InfraEnv, ...) and the hosts that
// booted, stored as assisted-service stores them (ScenarioRows). The
// generate*.go files make volume data.
package assisted

import (
	"context"
	"crypto/sha1" // #nosec G505 -- only to derive stable test UUIDs
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Scenario is one cluster as node 0's assisted-service holds it.
type Scenario struct {
	Name string
	// Objects are the CRs the cluster was registered from, ABI's install
	// manifests: ClusterDeployment, AgentClusterInstall, ClusterImageSet,
	// the pull-secret Secret, InfraEnv, NMStateConfigs, and any Secret or
	// ConfigMap they reference. Agents, when present, describe hosts.
	Objects []*unstructured.Unstructured
	// OpenshiftVersion is what the release image reports (the service asks
	// the image; tests cannot).
	OpenshiftVersion string
	// Hosts are the hosts that registered, in addition to any Agents.
	Hosts []ScenarioHost
}

// ScenarioHost is a host that booted the discovery ISO and registered.
type ScenarioHost struct {
	ID        string
	Role      string
	Hostname  string
	Bootstrap bool
	// IPs are the host's addresses with prefix length, e.g. 192.168.111.20/24.
	IPs []string
	// InstallationDiskID is the by-id name of the disk it installs to.
	InstallationDiskID string
	InstallerArgs      string
	IgnitionOverrides  string
	Approved           bool
}

// ScenarioRow is one row for one table, by column name.
type ScenarioRow struct {
	Table  string
	Values map[string]any
}

// Execer runs a statement; *pgx.Conn and pgx.Tx are Execers.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// InsertScenario writes the scenario's rows into db.
func InsertScenario(ctx context.Context, db Execer, s Scenario) error {
	rows, err := ScenarioRows(s)
	if err != nil {
		return err
	}
	return InsertRows(ctx, db, rows)
}

// InsertRows inserts each row with one INSERT statement.
func InsertRows(ctx context.Context, db Execer, rows []ScenarioRow) error {
	for _, r := range rows {
		cols := make([]string, 0, len(r.Values))
		for c := range r.Values {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		args := make([]any, len(cols))
		params := make([]string, len(cols))
		for i, c := range cols {
			args[i] = r.Values[c]
			params[i] = fmt.Sprintf("$%d", i+1)
			// Network columns are inet/cidr; let PostgreSQL parse the text.
			if _, ok := r.Values[c].(string); ok && (c == "cidr" || c == "ip") {
				params[i] += "::text::" + c
				if c == "ip" {
					params[i] = fmt.Sprintf("$%d::text::inet", i+1)
				}
			}
			cols[i] = `"` + c + `"`
		}
		sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", r.Table, strings.Join(cols, ", "), strings.Join(params, ", "))
		if _, err := db.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("insert into %s: %w", r.Table, err)
		}
	}
	return nil
}

// ScenarioUUID derives a stable UUID from a seed, so a scenario's rows have
// the same IDs in every run.
func ScenarioUUID(seed string) string {
	h := sha1.Sum([]byte(seed)) // #nosec G401
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
