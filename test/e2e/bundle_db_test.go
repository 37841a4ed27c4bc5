package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestBundleCreateDatabase bundles a real assisted-service database through the
// built binary (--db and --db-env-file), and checks that the metadata's row
// counts are the database's, that release_images keeps its definition but no
// rows by default, that verify decodes the database layer, and that a flipped
// byte inside the encrypted database layer is caught.
func TestBundleCreateDatabase(t *testing.T) {
	db := assisted.NewDatabase(t, assisted.Small)
	conn := db.Connect(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `INSERT INTO release_images (openshift_version, cpu_architecture, url, version)
		VALUES ('4.16', 'x86_64', 'quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64', '4.16.0')`); err != nil {
		t.Fatalf("seed release_images: %v", err)
	}
	want := map[string]int64{}
	for _, table := range []string{"clusters", "hosts", "events", "infra_envs", "release_images"} {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want[table] = n
	}
	if want["clusters"] == 0 || want["hosts"] == 0 || want["events"] == 0 || want["release_images"] == 0 {
		t.Fatalf("generator made no rows: %v", want)
	}

	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	dir := filepath.Join(t.TempDir(), "layout")
	created := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", "oci:"+dir+":v1", "--db", db.URL, "--data-dir", "",
		"--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json").Stdout)
	if len(created.Layers) != 1 || created.Layers[0].Kind != "database" {
		t.Fatalf("want one database layer, got %+v", created.Layers)
	}

	var inspect struct {
		Metadata struct {
			Source struct {
				PostgresVersion string   `json:"postgresVersion"`
				ClusterIDs      []string `json:"clusterIDs"`
			} `json:"source"`
			Database struct {
				Tables []struct {
					Schema, Name string
					Rows         int64
					Checksum     string
				} `json:"tables"`
			} `json:"database"`
		} `json:"metadata"`
	}
	out := p.MustRun(t, "bundle", "inspect", "oci:"+dir+":v1", "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &inspect); err != nil {
		t.Fatalf("inspect -o json: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, tb := range inspect.Metadata.Database.Tables {
		got[tb.Name] = tb.Rows
		// XXH3-128 since stream format 3.0 (bundle/pg/checksum.go).
		if !strings.HasPrefix(tb.Checksum, "xxh3-128:") || len(tb.Checksum) != len("xxh3-128:")+32 {
			t.Errorf("table %s: checksum %q", tb.Name, tb.Checksum)
		}
	}
	for table, n := range want {
		if table == "release_images" {
			if rows, ok := got[table]; !ok || rows != 0 {
				t.Errorf("release_images: want its definition with 0 rows by default, got present=%v rows=%d", ok, rows)
			}
			continue
		}
		if got[table] != n {
			t.Errorf("table %s: metadata says %d rows, database has %d", table, got[table], n)
		}
	}
	var pgVersion string
	var liveClusters int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), (SELECT count(*) FROM clusters WHERE deleted_at IS NULL)").Scan(&pgVersion, &liveClusters); err != nil {
		t.Fatal(err)
	}
	if inspect.Metadata.Source.PostgresVersion != pgVersion {
		t.Errorf("metadata postgresVersion %q, server says %q", inspect.Metadata.Source.PostgresVersion, pgVersion)
	}
	if len(inspect.Metadata.Source.ClusterIDs) != liveClusters || liveClusters == 0 {
		t.Errorf("metadata lists %d clusters, the database has %d live ones", len(inspect.Metadata.Source.ClusterIDs), liveClusters)
	}

	verified := p.MustRun(t, "bundle", "verify", "oci:"+dir+":v1", "--signer", signerFile(t), "--identity", key)
	if !strings.Contains(verified.Stdout+verified.Stderr, "database") {
		t.Errorf("verify does not mention the database layer:\n%s%s", verified.Stdout, verified.Stderr)
	}

	// The env-file form, asking for release_images rows too.
	envFile := filepath.Join(t.TempDir(), "assisted-service.env")
	var host, port, name string
	if err := conn.QueryRow(ctx, "SELECT '127.0.0.1', current_setting('port'), current_database()").Scan(&host, &port, &name); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envFile, []byte("DB_HOST="+host+"\nDB_PORT="+port+"\nDB_USER=postgres\nDB_PASS=\nDB_NAME="+name+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "layout2")
	p.MustRun(t, "bundle", "create", "--to", "oci:"+dir2, "--db-env-file", envFile, "--data-dir", "", "--db-exclude-table-data", "", "--no-encryption")
	out = p.MustRun(t, "bundle", "inspect", "oci:"+dir2, "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &inspect); err != nil {
		t.Fatal(err)
	}
	for _, tb := range inspect.Metadata.Database.Tables {
		if tb.Name == "release_images" && tb.Rows != want["release_images"] {
			t.Errorf("--db-exclude-table-data '': release_images has %d rows in the bundle, want %d", tb.Rows, want["release_images"])
		}
	}
	p.MustRun(t, "bundle", "verify", "oci:"+dir2, "--allow-unsigned")

	// Corrupt the database layer blob: verify must fail and name it.
	blob := filepath.Join(dir2, "blobs", strings.Replace(dbLayerDigest(t, p, "oci:"+dir2), ":", "/", 1))
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := p.Run(t, "bundle", "verify", "oci:"+dir2, "--allow-unsigned")
	if bad.ExitCode == 0 {
		t.Fatalf("verify passed a corrupted database layer:\n%s", bad.Stdout)
	}
}

func dbLayerDigest(t *testing.T, p *harness.Plugin, ref string) string {
	t.Helper()
	var r struct {
		Layers []struct{ Kind, Digest string } `json:"layers"`
	}
	out := p.MustRun(t, "bundle", "inspect", ref, "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Layers {
		if l.Kind == "database" {
			return l.Digest
		}
	}
	t.Fatalf("no database layer in %s", out)
	return ""
}
