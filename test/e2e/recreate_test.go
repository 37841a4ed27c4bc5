package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// scenarioDB is a fresh database with the real assisted schema and the
// scenario's rows, as node 0's service left them.
func scenarioDB(t *testing.T, s assisted.Scenario) *pgx.Conn {
	t.Helper()
	db := harness.NewDatabase(t)
	harness.LoadSQLFile(t, db.URL, harness.AssistedSchemaPath())
	conn := db.Connect(t)
	if err := assisted.InsertScenario(context.Background(), conn, s); err != nil {
		t.Fatal(err)
	}
	return conn
}

// writeKubeKeys does what restore/kubekeys does with Result.Keys.
func writeKubeKeys(t *testing.T, conn *pgx.Conn, keys recreate.KubeKeys) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys.Clusters {
		mustExec(t, conn, `UPDATE clusters SET kube_key_name = $1, kube_key_namespace = $2 WHERE id = $3`, k.Name, k.Namespace, k.ID)
	}
	for _, k := range keys.InfraEnvs {
		mustExec(t, conn, `UPDATE infra_envs SET name = $1, kube_key_namespace = $2 WHERE id = $3`, k.Name, k.Namespace, k.ID)
	}
	for _, k := range keys.Hosts {
		mustExec(t, conn, `UPDATE hosts SET kube_key_namespace = $1 WHERE id = $2 AND infra_env_id = $3`, k.Namespace, k.ID, k.InfraEnvID)
	}
	_ = ctx
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if tag.RowsAffected() == 0 && strings.HasPrefix(sql, "UPDATE") {
		t.Fatalf("%s %v: no row", sql, args)
	}
}

var resources = map[string]schema.GroupVersionResource{
	"ClusterImageSet":     {Group: "hive.openshift.io", Version: "v1", Resource: "clusterimagesets"},
	"ClusterDeployment":   {Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"},
	"AgentClusterInstall": {Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"},
	"InfraEnv":            {Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"},
	"NMStateConfig":       {Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "nmstateconfigs"},
	"Agent":               {Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"},
	"Secret":              {Version: "v1", Resource: "secrets"},
	"ConfigMap":           {Version: "v1", Resource: "configmaps"},
}

// createAll creates the objects with the real CRDs' validation and returns
// them as the API server hands them back (defaults applied), which is what
// the controllers read. ClusterImageSets are cluster-scoped; each test gives
// them a name of its own and points the AgentClusterInstalls at it.
func createAll(t *testing.T, client dynamic.Interface, ns string, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	objs = renameImageSets(objs, ns)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvr, ok := resources[o.GetKind()]
		if !ok {
			t.Fatalf("no resource for kind %s", o.GetKind())
		}
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if o.GetNamespace() != "" {
			ri = client.Resource(gvr).Namespace(o.GetNamespace())
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("the API server refused %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "ClusterImageSet" {
			name := o.GetName()
			t.Cleanup(func() { _ = client.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		got, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

func renameImageSets(objs []*unstructured.Unstructured, suffix string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		o = o.DeepCopy()
		switch o.GetKind() {
		case "ClusterImageSet":
			o.SetName(o.GetName() + "-" + suffix)
		case "AgentClusterInstall":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "imageSetRef", "name")
			_ = unstructured.SetNestedField(o.Object, name+"-"+suffix, "spec", "imageSetRef", "name")
		}
		out = append(out, o)
	}
	return out
}

// TestRecreate_ScenariosMatchDatabase: for each realistic scenario written as
// real rows into the real schema, the re-created objects are accepted by the
// real CRDs and, read back from the API server after the kube keys are in the
// rows, the drift check finds no difference.
func TestRecreate_ScenariosMatchDatabase(t *testing.T) {
	kube := harness.SharedKube(t)
	client := kube.Dynamic(t)
	ctx := context.Background()
	for _, s := range assisted.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			conn := scenarioDB(t, s)
			ns := kube.Namespace(t)
			res, err := recreate.Build(ctx, conn, recreate.Options{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			writeKubeKeys(t, conn, res.Keys)
			live := createAll(t, client, ns, res.Objects)

			rows, err := recreate.Load(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			diffs, err := recreate.Diff(live, rows)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Errorf("difference: %s", d)
			}
			// Round trip: the manifests the rows came from come back, field by field.
			for _, kind := range []string{"ClusterDeployment", "AgentClusterInstall", "InfraEnv"} {
				compareSpecs(t, kind, flatten(normalize(one(s.Objects, kind), s.Objects)), flatten(normalize(one(res.Objects, kind), res.Objects)))
			}
			if got, want := countKind(live, "Agent"), len(s.Hosts); got != want {
				t.Errorf("%d Agents, want one per host (%d)", got, want)
			}
			for _, o := range live {
				if strings.Contains(fmt.Sprint(o.Object), assisted.ScenarioPullSecret) {
					t.Errorf("%s %s carries the pull secret in clear (Secrets hold it base64 in data)", o.GetKind(), o.GetName())
				}
			}
			// The same objects also come out of the install manifests.
			mf := manifestsOf(t, s)
			res2, err := recreate.Build(ctx, conn, recreate.Options{Namespace: ns, Manifests: mf})
			if err != nil {
				t.Fatal(err)
			}
			diffs, err = recreate.Diff(res2.Objects, rows)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Errorf("difference with manifests: %s", d)
			}
		})
	}
}

// manifestsOf is the scenario's objects as ABI's manifest folder holds them.
func manifestsOf(t *testing.T, s assisted.Scenario) *recreate.Manifests {
	t.Helper()
	mf := &recreate.Manifests{}
	for _, o := range s.Objects {
		switch o.GetKind() {
		case "ClusterDeployment":
			mf.ClusterDeployment = o
		case "AgentClusterInstall":
			mf.AgentClusterInstall = o
		case "InfraEnv":
			mf.InfraEnv = o
		case "ClusterImageSet":
			mf.ClusterImageSet = o
		case "NMStateConfig":
			mf.NMStateConfigs = append(mf.NMStateConfigs, o)
		case "Secret":
			if strings.HasSuffix(o.GetName(), "-pull-secret") {
				mf.PullSecret = o
			}
		}
	}
	return mf
}

func countKind(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// TestRecreate_DriftOnRealRows changes one column in the real database after
// the objects exist and expects the one difference the controller would act on.
func TestRecreate_DriftOnRealRows(t *testing.T) {
	kube := harness.SharedKube(t)
	client := kube.Dynamic(t)
	ctx := context.Background()
	s := assisted.Scenarios()[0]
	conn := scenarioDB(t, s)
	ns := kube.Namespace(t)
	res, err := recreate.Build(ctx, conn, recreate.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	writeKubeKeys(t, conn, res.Keys)
	live := createAll(t, client, ns, res.Objects)
	host := s.Hosts[1].ID

	tests := []struct {
		name, change, undo, field, column string
	}{
		{"cluster name", `UPDATE clusters SET name = 'renamed'`, `UPDATE clusters SET name = 'compact'`, "spec.clusterName", "clusters.name"},
		{"api vip", `UPDATE api_vips SET ip = '192.168.111.6'`, `UPDATE api_vips SET ip = '192.168.111.5'`, "spec.apiVIPs", "api_vips"},
		{"machine network", `UPDATE machine_networks SET cidr = '192.168.0.0/16'`, `UPDATE machine_networks SET cidr = '192.168.111.0/24'`, "spec.networking.machineNetwork", "machine_networks"},
		{"pull secret", `UPDATE clusters SET pull_secret = '{"auths":{}}'`, `UPDATE clusters SET pull_secret = '` + assisted.ScenarioPullSecret + `'`, "spec.pullSecretRef(.dockerconfigjson)", "clusters.pull_secret"},
		{"host unbound", `UPDATE hosts SET cluster_id = NULL WHERE id = '` + host + `'`, `UPDATE hosts SET cluster_id = (SELECT id FROM clusters) WHERE id = '` + host + `'`, "spec.clusterDeploymentName", "hosts.cluster_id"},
		{"infra-env ssh key", `UPDATE infra_envs SET ssh_authorized_key = 'ssh-rsa AAAA other'`, `UPDATE infra_envs SET ssh_authorized_key = (SELECT ssh_public_key FROM clusters)`, "spec.sshAuthorizedKey", "infra_envs.ssh_authorized_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustExec(t, conn, tt.change)
			defer mustExec(t, conn, tt.undo)
			rows, err := recreate.Load(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			diffs, err := recreate.Diff(live, rows)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) != 1 || diffs[0].Field != tt.field || diffs[0].Column != tt.column {
				t.Fatalf("want one difference %s / %s, got %v", tt.field, tt.column, diffs)
			}
			if strings.Contains(diffs[0].String(), "c2NlbmFyaW8") {
				t.Fatal("the difference shows the pull secret")
			}
		})
	}
}
