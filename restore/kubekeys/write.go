package kubekeys

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Match is one CR matched to its row.
type Match struct {
	Kind string `json:"kind"` // ClusterDeployment, InfraEnv or Agent
	Ref
	ID         string `json:"id"`
	InfraEnvID string `json:"infraEnvID,omitempty"` // hosts: the second half of the key
	// By says how the row was found.
	By string `json:"by"`
}

// Result is what Write matched and wrote.
type Result struct {
	Matches []Match `json:"matches"`
	// UnkeyedClusters and UnkeyedHosts are live rows no CR claimed; the
	// controllers will not see them.
	UnkeyedClusters []string `json:"unkeyedClusters,omitempty"`
	UnkeyedHosts    []string `json:"unkeyedHosts,omitempty"`
}

// MismatchError lists every CR that has no row, several candidate rows, or a
// row another key already claims. Write changes nothing when it returns one.
type MismatchError struct{ Problems []string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("kube keys: %d CR(s) do not match the database: %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

type matcher struct {
	ctx      context.Context
	tx       pgx.Tx
	problems []string
	res      Result
	clusters map[Ref]string // CD -> cluster id
	infra    map[Ref]string // InfraEnv -> infra-env id
	claimed  map[string]string
}

func (m *matcher) problem(format string, args ...any) {
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

// Write matches t against the database in tx and writes the kube keys. On a
// *MismatchError nothing was written; the caller commits or rolls back tx.
func Write(ctx context.Context, tx pgx.Tx, t Targets) (*Result, error) {
	m := &matcher{ctx: ctx, tx: tx, clusters: map[Ref]string{}, infra: map[Ref]string{}, claimed: map[string]string{}}
	for _, c := range t.Clusters {
		if err := m.cluster(c); err != nil {
			return nil, err
		}
	}
	for _, ie := range t.InfraEnvs {
		if err := m.infraEnv(ie); err != nil {
			return nil, err
		}
	}
	for _, h := range t.Hosts {
		if err := m.host(h); err != nil {
			return nil, err
		}
	}
	if len(m.problems) > 0 {
		return nil, &MismatchError{Problems: m.problems}
	}
	for _, mt := range m.res.Matches {
		var sql string
		var args []any
		switch mt.Kind {
		case "ClusterDeployment":
			sql, args = `UPDATE clusters SET kube_key_name = $1, kube_key_namespace = $2 WHERE id = $3`, []any{mt.Name, mt.Namespace, mt.ID}
		case "InfraEnv":
			sql, args = `UPDATE infra_envs SET name = $1, kube_key_namespace = $2 WHERE id = $3`, []any{mt.Name, mt.Namespace, mt.ID}
		case "Agent":
			sql, args = `UPDATE hosts SET kube_key_namespace = $1 WHERE id = $2 AND infra_env_id = $3`, []any{mt.Namespace, mt.ID, mt.InfraEnvID}
		}
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return nil, fmt.Errorf("write kube key of %s %s: %w", mt.Kind, mt.Ref, err)
		}
		if tag.RowsAffected() != 1 {
			return nil, fmt.Errorf("write kube key of %s %s: %d rows changed, want 1", mt.Kind, mt.Ref, tag.RowsAffected())
		}
	}
	if err := m.unkeyed(); err != nil {
		return nil, err
	}
	return &m.res, nil
}

func (m *matcher) ids(sql string, args ...any) ([]string, error) {
	rows, err := m.tx.Query(m.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	sort.Strings(ids)
	return ids, err
}

// claim records a row for a CR, refusing a row two CRs want.
func (m *matcher) claim(kind string, r Ref, id, infraEnvID, by string) bool {
	k := kind + "/" + id + "/" + infraEnvID
	if other, ok := m.claimed[k]; ok {
		m.problem("%s %s and %s match the same row %s", kind, other, r, id)
		return false
	}
	m.claimed[k] = r.String()
	m.res.Matches = append(m.res.Matches, Match{Kind: kind, Ref: r, ID: id, InfraEnvID: infraEnvID, By: by})
	return true
}

func (m *matcher) cluster(c Cluster) error {
	const live = ` AND deleted_at IS NULL`
	ids, err := m.ids(`SELECT id FROM clusters WHERE (id = ANY($1) OR openshift_cluster_id = ANY($2))`+live, nonNil(c.IDs), nonNil(c.OpenShiftIDs))
	if err != nil {
		return fmt.Errorf("find cluster of ClusterDeployment %s: %w", c.Ref, err)
	}
	by := "cluster id carried by the CRs"
	if len(ids) == 0 {
		by = "name and base domain"
		if ids, err = m.ids(`SELECT id FROM clusters WHERE name = $1 AND base_dns_domain = $2`+live, c.ClusterName, c.BaseDomain); err != nil {
			return fmt.Errorf("find cluster of ClusterDeployment %s: %w", c.Ref, err)
		}
	}
	switch len(ids) {
	case 0:
		m.problem("ClusterDeployment %s: no cluster row (ids %v, name %q, base domain %q)", c.Ref, c.IDs, c.ClusterName, c.BaseDomain)
		return nil
	case 1:
	default:
		m.problem("ClusterDeployment %s: several cluster rows match by %s: %s", c.Ref, by, strings.Join(ids, ", "))
		return nil
	}
	var keyName, keyNS string
	if err := m.tx.QueryRow(m.ctx, `SELECT coalesce(kube_key_name, ''), coalesce(kube_key_namespace, '') FROM clusters WHERE id = $1`, ids[0]).Scan(&keyName, &keyNS); err != nil {
		return err
	}
	if keyName != "" && (keyName != c.Name || keyNS != c.Namespace) {
		m.problem("ClusterDeployment %s: cluster %s already has the kube key %s/%s", c.Ref, ids[0], keyNS, keyName)
		return nil
	}
	if m.claim("ClusterDeployment", c.Ref, ids[0], "", by) {
		m.clusters[c.Ref] = ids[0]
	}
	return nil
}

func (m *matcher) infraEnv(ie InfraEnv) error {
	ids, err := m.ids(`SELECT id FROM infra_envs WHERE id = ANY($1)`, nonNil(ie.IDs))
	if err != nil {
		return fmt.Errorf("find infra-env of InfraEnv %s: %w", ie.Ref, err)
	}
	by := "infra-env id in its status URLs"
	if len(ids) == 0 && ie.Cluster != nil {
		clusterID, ok := m.clusters[*ie.Cluster]
		if !ok {
			m.problem("InfraEnv %s: its ClusterDeployment %s has no matched cluster row", ie.Ref, ie.Cluster)
			return nil
		}
		by = "cluster and name"
		if ids, err = m.ids(`SELECT id FROM infra_envs WHERE cluster_id = $1 AND name = $2`, clusterID, ie.Name); err == nil && len(ids) == 0 {
			by = "the only infra-env of its cluster"
			ids, err = m.ids(`SELECT id FROM infra_envs WHERE cluster_id = $1`, clusterID)
		}
	} else if len(ids) == 0 {
		by = "name, not bound to a cluster"
		ids, err = m.ids(`SELECT id FROM infra_envs WHERE name = $1 AND coalesce(cluster_id, '') = ''`, ie.Name)
	}
	if err != nil {
		return fmt.Errorf("find infra-env of InfraEnv %s: %w", ie.Ref, err)
	}
	switch len(ids) {
	case 0:
		m.problem("InfraEnv %s: no infra-env row (ids %v)", ie.Ref, ie.IDs)
		return nil
	case 1:
	default:
		m.problem("InfraEnv %s: several infra-env rows match by %s: %s", ie.Ref, by, strings.Join(ids, ", "))
		return nil
	}
	// The kube key (name, namespace) must stay unique across rows.
	others, err := m.ids(`SELECT id FROM infra_envs WHERE name = $1 AND kube_key_namespace = $2 AND id <> $3`, ie.Name, ie.Namespace, ids[0])
	if err != nil {
		return err
	}
	if len(others) > 0 {
		m.problem("InfraEnv %s: infra-env %s already has this kube key", ie.Ref, others[0])
		return nil
	}
	if m.claim("InfraEnv", ie.Ref, ids[0], "", by) {
		m.infra[ie.Ref] = ids[0]
	}
	return nil
}

func (m *matcher) host(h Host) error {
	rows, err := m.tx.Query(m.ctx, `SELECT infra_env_id, coalesce(cluster_id, '') FROM hosts WHERE id = $1 AND deleted_at IS NULL ORDER BY infra_env_id`, h.Name)
	if err != nil {
		return fmt.Errorf("find host of Agent %s: %w", h.Ref, err)
	}
	type row struct{ InfraEnvID, ClusterID string }
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return fmt.Errorf("find host of Agent %s: %w", h.Ref, err)
	}
	by := "host id (the Agent name)"
	if ie, ok := m.infra[Ref{h.Namespace, h.InfraEnv}]; ok && len(found) > 1 {
		var keep []row
		for _, r := range found {
			if r.InfraEnvID == ie {
				keep = append(keep, r)
			}
		}
		found, by = keep, "host id and its InfraEnv"
	}
	switch len(found) {
	case 0:
		m.problem("Agent %s: no host row with this id", h.Ref)
		return nil
	case 1:
	default:
		m.problem("Agent %s: host rows in several infra-envs and none is its InfraEnv %q", h.Ref, h.InfraEnv)
		return nil
	}
	r := found[0]
	switch {
	case r.ClusterID != "" && h.Cluster == nil:
		m.problem("Agent %s: the host is bound to cluster %s but the Agent has no spec.clusterDeploymentName; the controller would unbind it and reclaim the node", h.Ref, r.ClusterID)
		return nil
	case h.Cluster != nil:
		if want, ok := m.clusters[*h.Cluster]; ok && r.ClusterID != want {
			m.problem("Agent %s: bound to ClusterDeployment %s (cluster %s) but the host row belongs to cluster %q", h.Ref, h.Cluster, want, r.ClusterID)
			return nil
		}
	}
	m.claim("Agent", h.Ref, h.Name, r.InfraEnvID, by)
	return nil
}

// unkeyed lists live rows without kube keys after the writes.
func (m *matcher) unkeyed() error {
	var err error
	if m.res.UnkeyedClusters, err = m.ids(`SELECT id FROM clusters WHERE deleted_at IS NULL AND coalesce(kube_key_name, '') = ''`); err != nil {
		return err
	}
	m.res.UnkeyedHosts, err = m.ids(`SELECT id FROM hosts WHERE deleted_at IS NULL AND coalesce(kube_key_namespace, '') = ''`)
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
