package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

const (
	agentID   = "0479107b-3436-45d3-83a8-cb9a1dc4fb9e"
	otherHost = "9f0e2a4c-0000-4000-8000-00000000abcd"
	otherCl   = "c0ffee00-0000-4000-8000-000000000001"
	otherIE   = "c0ffee00-0000-4000-8000-000000000002"
)

// restDatabase is a database with the real assisted schema and the rows node 0
// (REST mode, no kube keys) had, plus rows no CR describes.
func restDatabase(t *testing.T, extra ...string) *pgx.Conn {
	t.Helper()
	db := harness.NewDatabase(t)
	harness.LoadSQLFile(t, db.URL, harness.AssistedSchemaPath())
	db.Exec(t, `
INSERT INTO clusters (id, name, base_dns_domain, kind) VALUES
  ('`+node0Cluster+`', 'test-cluster', 'hive.example.com', 'Cluster'),
  ('`+otherCl+`', 'other', 'elsewhere.example.com', 'Cluster');
INSERT INTO clusters (id, name, base_dns_domain, kind, deleted_at) VALUES
  ('d0d0d0d0-0000-4000-8000-000000000000', 'test-cluster', 'hive.example.com', 'Cluster', now());
INSERT INTO infra_envs (id, cluster_id, name) VALUES
  ('`+node0Infra+`', '`+node0Cluster+`', 'test-cluster_infra-env'),
  ('`+otherIE+`', '`+otherCl+`', 'other_infra-env');
INSERT INTO hosts (id, infra_env_id, cluster_id) VALUES
  ('`+agentID+`', '`+node0Infra+`', '`+node0Cluster+`'),
  ('`+otherHost+`', '`+node0Infra+`', '`+node0Cluster+`');
`+strings.Join(extra, "\n"))
	return db.Connect(t)
}

func keysOf(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) string {
	t.Helper()
	var a, b string
	if err := q.QueryRow(context.Background(), sql, args...).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	return a + "|" + b
}

func TestKubeKeys_MatchedAndWrittenOnTheRealSchema(t *testing.T) {
	conn := restDatabase(t)
	ctx := context.Background()
	targets, err := kubekeys.FromObjects(node0Export(t, "kk"), func(ns string) string { return "mce" })
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ { // the second run is a rerun: it converges
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := kubekeys.Write(ctx, tx, targets)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 3 || res.Matches[0].By != "cluster id carried by the CRs" {
			t.Fatalf("run %d matches = %+v", run, res.Matches)
		}
		if strings.Join(res.UnkeyedClusters, ",") != otherCl || strings.Join(res.UnkeyedHosts, ",") != otherHost {
			t.Errorf("unkeyed: clusters %v hosts %v", res.UnkeyedClusters, res.UnkeyedHosts)
		}
	}
	for sql, want := range map[string]string{
		`SELECT coalesce(kube_key_name,''), coalesce(kube_key_namespace,'') FROM clusters WHERE id = '` + node0Cluster + `'`: "single-node|mce",
		`SELECT coalesce(kube_key_name,''), coalesce(kube_key_namespace,'') FROM clusters WHERE id = '` + otherCl + `'`:      "|",
		`SELECT name, coalesce(kube_key_namespace,'') FROM infra_envs WHERE id = '` + node0Infra + `'`:                       "myinfraenv|mce",
		`SELECT name, coalesce(kube_key_namespace,'') FROM infra_envs WHERE id = '` + otherIE + `'`:                          "other_infra-env|",
		`SELECT infra_env_id, coalesce(kube_key_namespace,'') FROM hosts WHERE id = '` + agentID + `'`:                       node0Infra + "|mce",
		`SELECT infra_env_id, coalesce(kube_key_namespace,'') FROM hosts WHERE id = '` + otherHost + `'`:                     node0Infra + "|",
	} {
		if got := keysOf(t, conn, sql); got != want {
			t.Errorf("%s\n got %s, want %s", sql, got, want)
		}
	}
}

func TestKubeKeys_FallbackByNameAndBaseDomain(t *testing.T) {
	conn := restDatabase(t)
	ctx := context.Background()
	objs := node0Export(t, "kk")
	for _, o := range objs { // CRs as a manifests directory would hold them: no ids at all
		unstructured.RemoveNestedField(o.Object, "status")
		unstructured.RemoveNestedField(o.Object, "spec", "clusterMetadata")
	}
	targets, _ := kubekeys.FromObjects(objs, func(string) string { return "mce" })
	tx, _ := conn.Begin(ctx)
	defer tx.Rollback(ctx)
	res, err := kubekeys.Write(ctx, tx, targets)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, m := range res.Matches {
		by[m.Kind] = m.ID + " by " + m.By
	}
	if by["ClusterDeployment"] != node0Cluster+" by name and base domain" || by["InfraEnv"] != node0Infra+" by the only infra-env of its cluster" {
		t.Fatalf("matches = %v", by)
	}
}

func TestKubeKeys_MismatchesReportedAndNothingWritten(t *testing.T) {
	ctx := context.Background()
	t.Run("ambiguous cluster, no host row", func(t *testing.T) {
		conn := restDatabase(t, `INSERT INTO clusters (id, name, base_dns_domain) VALUES ('`+otherCl+`-2', 'test-cluster', 'hive.example.com');`,
			`DELETE FROM hosts WHERE id = '`+agentID+`';`)
		objs := node0Export(t, "kk")
		for _, o := range objs {
			unstructured.RemoveNestedField(o.Object, "status")
			unstructured.RemoveNestedField(o.Object, "spec", "clusterMetadata")
		}
		targets, _ := kubekeys.FromObjects(objs, nil)
		tx, _ := conn.Begin(ctx)
		defer tx.Rollback(ctx)
		_, err := kubekeys.Write(ctx, tx, targets)
		var me *kubekeys.MismatchError
		if !errors.As(err, &me) || len(me.Problems) != 3 {
			t.Fatalf("err = %v, want 3 problems (cluster ambiguous, infra-env without cluster, agent without host)", err)
		}
		for _, want := range []string{"several cluster rows", "InfraEnv spoke-cluster/myinfraenv", "no host row"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		var keyed int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM clusters WHERE kube_key_name IS NOT NULL)
			+ (SELECT count(*) FROM infra_envs WHERE kube_key_namespace IS NOT NULL)
			+ (SELECT count(*) FROM hosts WHERE kube_key_namespace IS NOT NULL)`).Scan(&keyed); err != nil || keyed != 0 {
			t.Fatalf("rows keyed despite the mismatch: %d (%v)", keyed, err)
		}
	})
	t.Run("bound host, unbound agent", func(t *testing.T) {
		conn := restDatabase(t)
		objs := node0Export(t, "kk")
		for _, o := range objs {
			if o.GetKind() == "Agent" {
				unstructured.RemoveNestedField(o.Object, "spec", "clusterDeploymentName")
			}
		}
		targets, _ := kubekeys.FromObjects(objs, nil)
		tx, _ := conn.Begin(ctx)
		defer tx.Rollback(ctx)
		_, err := kubekeys.Write(ctx, tx, targets)
		var me *kubekeys.MismatchError
		if !errors.As(err, &me) || len(me.Problems) != 1 || !strings.Contains(err.Error(), "reclaim") {
			t.Fatalf("err = %v, want one problem about the unbound agent", err)
		}
	})
	t.Run("row keyed to another CR", func(t *testing.T) {
		conn := restDatabase(t, `UPDATE clusters SET kube_key_name = 'someone', kube_key_namespace = 'else' WHERE id = '`+node0Cluster+`';`)
		targets, _ := kubekeys.FromObjects(node0Export(t, "kk"), nil)
		tx, _ := conn.Begin(ctx)
		defer tx.Rollback(ctx)
		_, err := kubekeys.Write(ctx, tx, targets)
		if err == nil || !strings.Contains(err.Error(), "already has the kube key else/someone") {
			t.Fatalf("err = %v", err)
		}
	})
}
