package e2e

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	bres "github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	crs "github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// pgDumpSource is the database layer's source: the real engine (bundle/pg),
// as `bundle create --db` wires it.
type pgDumpSource struct{ url string }

func (s pgDumpSource) Dump(ctx context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	sum, err := pg.Dump(ctx, s.url, w, pg.DumpOptions{ExcludeTables: pg.DefaultExcludeTables})
	if err != nil {
		return nil, err
	}
	out := &bundle.DatabaseSummary{ServerVersion: sum.ServerVersion, LastMigration: sum.LastMigration}
	for _, t := range sum.Tables {
		out.Tables = append(out.Tables, bundle.TableInfo{Schema: t.Schema, Name: t.Name, Rows: t.Rows, Checksum: t.Checksum})
	}
	return out, nil
}

// exportedObjects is a resources layer of objects exported from node 0's API,
// stored in the given order under cluster/ as the exporter stores them.
type exportedObjects []*unstructured.Unstructured

func (s exportedObjects) Write(_ context.Context, w io.Writer) (*bres.Summary, error) {
	tw := tar.NewWriter(w)
	sum := &bres.Summary{From: bres.FromClusterName, Kinds: map[string]int{}}
	for i, o := range s {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("cluster/%05d-%s-%s.json", i, strings.ToLower(o.GetKind()), o.GetName()),
			Mode: 0o600, Size: int64(len(b)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
		sum.Objects++
		sum.Kinds[o.GetKind()]++
	}
	return sum, tw.Close()
}

// bundleRegistryNone reaches local layouts and archives.
var bundleRegistryNone = oci.RegistryOptions{}

// makeBundle writes a bundle to ref with the real engines and returns its digest.
func makeBundle(t *testing.T, ref string, reg oci.RegistryOptions, recipient string, opts bundle.CreateOptions) string {
	t.Helper()
	if recipient != "" {
		r, err := age.ParseX25519Recipient(recipient)
		if err != nil {
			t.Fatal(err)
		}
		opts.Recipients = []age.Recipient{r}
	}
	if opts.SigningKey == nil {
		_, _, opts.SigningKey = node0Signer(t) // restores pass signerArgs
	}
	res, err := bundle.Create(context.Background(), ref, reg, opts)
	if err != nil {
		t.Fatalf("create bundle %s: %v", ref, err)
	}
	return res.Digest
}

// node0SQL are the rows node 0 (REST mode, no kube keys) holds for the
// clusters of node0Export.
const node0SQL = `
INSERT INTO clusters (id, name, base_dns_domain, kind) VALUES ('` + node0Cluster + `', 'test-cluster', 'hive.example.com', 'Cluster');
INSERT INTO infra_envs (id, cluster_id, name) VALUES ('` + node0Infra + `', '` + node0Cluster + `', 'test-cluster_infra-env');
INSERT INTO hosts (id, infra_env_id, cluster_id) VALUES ('` + agentID + `', '` + node0Infra + `', '` + node0Cluster + `');`

// node0Database is node 0's database: the real schema, realistic volume from
// the generators (clusters, hosts with inventories, events) and the rows the
// exported CRs describe.
func node0Database(t *testing.T, scale assisted.Scale, extraSQL ...string) *harness.Database {
	t.Helper()
	db := assisted.NewDatabase(t, scale)
	db.Exec(t, node0SQL+strings.Join(extraSQL, "\n"))
	return db
}

// emptyDatabase is a fresh, empty target database.
func emptyDatabase(t *testing.T) *harness.Database {
	t.Helper()
	return harness.NewDatabase(t)
}

// tableSums is every table's row count and content hash, leaving out the
// given columns (the kube keys a restore writes).
func tableSums(t *testing.T, url string, skipCols ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tb := range tables {
		var n int64
		var sum string
		q := `SELECT count(*), md5(coalesce(string_agg(x::text, E'\n' ORDER BY x::text), '')) FROM (SELECT to_jsonb(t) - $1::text[] AS x FROM public.` +
			pgx.Identifier{tb}.Sanitize() + ` t) s`
		if err := conn.QueryRow(ctx, q, append([]string{}, skipCols...)).Scan(&n, &sum); err != nil {
			t.Fatalf("checksum %s: %v", tb, err)
		}
		out[tb] = fmt.Sprintf("%d rows %s", n, sum)
	}
	return out
}

// userTables counts the tables of the public schema (0: the database is empty).
func userTables(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// visibleTables counts the tables outside the staging schemas a killed
// restore leaves (kubectl_assisted_staging_*, which no reader sees and the
// next restore drops): what the target holds.
func visibleTables(t *testing.T, url string) int {
	t.Helper()
	return userTables(t, url) - len(stagingTables(t, url))
}

// stagingTables lists the tables in restore staging schemas.
func stagingTables(t *testing.T, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT schemaname || '.' || tablename FROM pg_tables WHERE schemaname LIKE 'kubectl\_assisted\_staging\_%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// fileTree describes every entry under dir: type, mode, size, content hash,
// mtime, symlink target and user.* xattrs.
func fileTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v", info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += fmt.Sprintf(" %d %s %s", len(b), hex.EncodeToString(sum[:8]), info.ModTime().UTC().Format(time.RFC3339))
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			buf := make([]byte, 4096)
			if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
				var attrs []string
				for _, name := range strings.Split(string(buf[:n]), "\x00") {
					if strings.HasPrefix(name, "user.") {
						v := make([]byte, 4096)
						m, _ := unix.Lgetxattr(p, name, v)
						attrs = append(attrs, name+"="+string(v[:max(m, 0)]))
					}
				}
				sort.Strings(attrs)
				desc += " " + strings.Join(attrs, ",")
			}
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bundleObjects GETs every object of node0Export(id) (mapped into ns) on
// cluster 0 and returns those a restore wrote (they carry the bundle-digest
// annotation), keyed "Kind/name". GETs, unlike the test API server's
// consistent LISTs of custom resources, answer at once.
func bundleObjects(t *testing.T, k *harness.Kube, ns, id string) map[string]*unstructured.Unstructured {
	t.Helper()
	dyn := k.Dynamic(t)
	out := map[string]*unstructured.Unstructured{}
	for _, o := range node0Export(t, id) {
		idx := crs.StepIndex(o)
		if idx < 0 || o.GetKind() == "Namespace" {
			continue
		}
		step := crs.Order[idx]
		gvr := o.GroupVersionKind().GroupVersion().WithResource(step.Resource)
		var got *unstructured.Unstructured
		var err error
		if step.Namespaced {
			got, err = dyn.Resource(gvr).Namespace(ns).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		} else {
			got, err = dyn.Resource(gvr).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatalf("get %s %s: %v", o.GetKind(), o.GetName(), err)
		case got.GetAnnotations()[crs.AnnotationBundleDigest] != "":
			out[o.GetKind()+"/"+o.GetName()] = got
		}
	}
	return out
}

// objectsState is what a restore leaves on cluster 0, independent of the
// namespace name and UIDs (see endState): each object's labels, annotations,
// content, and owners by name with whether the UID is the owner's current one.
func objectsState(t *testing.T, k *harness.Kube, ns, id string) map[string]string {
	t.Helper()
	objs := bundleObjects(t, k, ns, id)
	out := map[string]string{}
	for name, o := range objs {
		var owners []string
		for _, ref := range o.GetOwnerReferences() {
			owner := objs[ref.Kind+"/"+ref.Name]
			owners = append(owners, fmt.Sprintf("%s/%s current=%v", ref.Kind, ref.Name, owner != nil && owner.GetUID() == ref.UID))
		}
		c := o.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata")
		unstructured.RemoveNestedField(c.Object, "status", "debugInfo", "eventsURL") // signed with a fresh iat
		unstructured.RemoveNestedField(c.Object, "status", "debugInfo", "logsURL")
		body, _ := json.Marshal(map[string]any{"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "owners": owners, "content": c.Object})
		out[name] = strings.ReplaceAll(string(body), ns, "NS")
	}
	return out
}

// journalConfigMaps lists the restore journals and receipts in ns.
func journalConfigMaps(t *testing.T, k *harness.Kube, ns string) []string {
	t.Helper()
	list, err := k.Clientset(t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-assisted"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	return names
}

// secretNames lists the Secrets in ns.
func secretNames(t *testing.T, k *harness.Kube, ns string) []string {
	t.Helper()
	list, err := k.Clientset(t).CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// restoreResultJSON is the part of `restore -o json` the tests read.
type restoreResultJSON struct {
	Kind          string `json:"kind"`
	Digest        string `json:"digest"`
	Resumed       bool   `json:"resumed"`
	ResourcesFrom string `json:"resourcesFrom"`
	Phases        []struct {
		Phase  string           `json:"phase"`
		Ran    bool             `json:"ran"`
		Counts map[string]int64 `json:"counts"`
	} `json:"phases"`
	Receipt *struct {
		BundleDigest string   `json:"bundleDigest"`
		Phases       []string `json:"phases"`
	} `json:"receipt"`
	Database *struct {
		Tables     int   `json:"tables"`
		Rows       int64 `json:"rows"`
		RolledBack bool  `json:"rolledBack"`
	} `json:"database"`
	Files *struct {
		Files      int64    `json:"files"`
		XattrsLost []string `json:"xattrsLost"`
	} `json:"files"`
	Resources *struct {
		Counts map[string]int `json:"counts"`
	} `json:"resources"`
	Warnings []string `json:"warnings"`
}

func parseRestore(t *testing.T, r harness.Result) restoreResultJSON {
	t.Helper()
	var out restoreResultJSON
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Kind != "RestoreResult" {
		t.Fatalf("restore -o json: %v\n%s", err, r.Combined())
	}
	return out
}

func phaseNames(r restoreResultJSON) string {
	var names []string
	for _, p := range r.Phases {
		s := p.Phase
		if !p.Ran {
			s += "(earlier)"
		}
		names = append(names, s)
	}
	return strings.Join(names, ",")
}
