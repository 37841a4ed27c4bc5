package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// These tests prove the harness talks to the real components; every later
// feature test stands on them.

func TestHarness_PostgresLoadsAssistedSchema(t *testing.T) {
	db := harness.NewDatabase(t)
	harness.LoadSQLFile(t, db.URL, harness.AssistedSchemaPath())
	c := db.Connect(t)
	var n int
	if err := c.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 12 {
		t.Fatalf("assisted schema: %d tables, want 12", n)
	}
	// A real constraint answers: the hosts primary key is (id, infra_env_id).
	_, err := c.Exec(context.Background(), `INSERT INTO hosts (id, infra_env_id) VALUES ('a', 'b'), ('a', 'b')`)
	if err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate host key: err = %v, want a duplicate key violation", err)
	}
}

func TestHarness_PrivatePostgresRestarts(t *testing.T) {
	srv := harness.StartPostgres(t)
	db := srv.NewDatabase(t)
	db.Exec(t, `CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')`)
	srv.Kill()
	srv.Restart(t)
	var v string
	if err := db.Connect(t).QueryRow(context.Background(), `SELECT v FROM t`).Scan(&v); err != nil || v != "kept" {
		t.Fatalf("after crash and restart: v = %q, err = %v", v, err)
	}
}

func TestHarness_Registries(t *testing.T) {
	t.Run("in-process", func(t *testing.T) {
		r := harness.StartInProcessRegistry(t)
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v2/: %s", resp.Status)
		}
	})
	t.Run("docker-registry tls+auth", func(t *testing.T) {
		r := harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true})
		client := harness.HTTPSClient(t, r.CAFile)
		resp, err := client.Get("https://" + r.Host + "/v2/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous GET /v2/: %s, want 401", resp.Status)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://"+r.Host+"/v2/", nil)
		req.SetBasicAuth(r.Username, r.Password)
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("authenticated GET /v2/: %s, want 200", resp.Status)
		}
	})
}

func TestHarness_KubeAPIValidatesWithRealCRDs(t *testing.T) {
	k := harness.SharedKube(t)
	ns := k.Namespace(t)
	dc := k.Dynamic(t)
	aci := schema.GroupVersionResource{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"}
	objs, err := harness.ReadObjects(filepath.Join(harness.ExampleCRsDir(), "agentClusterInstall.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	good := objs[0]
	good.SetNamespace(ns)
	if _, err := dc.Resource(aci).Namespace(ns).Create(context.Background(), good, metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid AgentClusterInstall rejected: %v", err)
	}
	bad := good.DeepCopy()
	bad.SetName("bad")
	if err := unstructured.SetNestedField(bad.Object, "three", "spec", "provisionRequirements", "controlPlaneAgents"); err != nil {
		t.Fatal(err)
	}
	_, err = dc.Resource(aci).Namespace(ns).Create(context.Background(), bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "controlPlaneAgents") {
		t.Fatalf("schema violation: err = %v, want Invalid naming controlPlaneAgents", err)
	}
	// OpenShift config CRDs are served too.
	cv := schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := dc.Resource(cv).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list clusterversions: %v", err)
	}
	// Token users are real identities: nobody may not list secrets.
	nobody := harness.NewDynamicFor(t, k, harness.NobodyUser)
	_, err = nobody.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("nobody listing secrets: err = %v, want Forbidden", err)
	}
}
