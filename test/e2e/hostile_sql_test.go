package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// ddlEntry is one entry of a database stream's pre-data.json or
// post-data.json, as an attacker edits it.
type ddlEntry struct {
	Kind   string `json:"kind"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
	SQL    string `json:"sql"`
}

// editedDump is a database layer source that replays a real dump with its
// pre-data and post-data edited: what someone who can push to the registry
// and knows only the public age recipient can build. bundle.Create then
// encrypts it to the recipient and records every digest, so the bundle is
// intact and decrypts; only its SQL is hostile.
type editedDump struct {
	stream []byte
	sum    *pg.Summary
	edit   func(pre, post *[]ddlEntry)
}

func (s editedDump) Dump(_ context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	type member struct {
		hdr  *tar.Header
		body []byte
	}
	var members []member
	lists := map[string]*[]ddlEntry{}
	var pre, post []ddlEntry
	tr := tar.NewReader(bytes.NewReader(s.stream))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		members = append(members, member{hdr, body})
		l := map[string]*[]ddlEntry{"pre-data.json": &pre, "post-data.json": &post}[hdr.Name]
		if l == nil {
			continue
		}
		var d struct {
			Objects []ddlEntry `json:"objects"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, err
		}
		*l = d.Objects
		lists[hdr.Name] = l
	}
	if len(lists) != 2 {
		return nil, fmt.Errorf("the dump has no pre-data or post-data")
	}
	s.edit(&pre, &post)
	tw := tar.NewWriter(w)
	for _, m := range members {
		if l, ok := lists[m.hdr.Name]; ok {
			b, err := json.Marshal(map[string]any{"objects": *l})
			if err != nil {
				return nil, err
			}
			m.body = b
		}
		m.hdr.Size = int64(len(m.body))
		if err := tw.WriteHeader(m.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(m.body); err != nil {
			return nil, err
		}
	}
	out := &bundle.DatabaseSummary{ServerVersion: s.sum.ServerVersion, LastMigration: s.sum.LastMigration}
	for _, t := range s.sum.Tables {
		out.Tables = append(out.Tables, bundle.TableInfo{Schema: t.Schema, Name: t.Name, Rows: t.Rows, Checksum: t.Checksum})
	}
	return out, tw.Close()
}

// sqlCase is one crafted bundle: how its database stream is edited and
// what the refusal says.
type sqlCase struct {
	name string
	edit func(pre, post *[]ddlEntry)
	want string
}

func prependPre(e ddlEntry) func(pre, post *[]ddlEntry) {
	return func(pre, _ *[]ddlEntry) { *pre = append([]ddlEntry{e}, *pre...) }
}

func appendPost(e ddlEntry) func(pre, post *[]ddlEntry) {
	return func(_, post *[]ddlEntry) { *post = append(*post, e) }
}

// rewrite changes the SQL of the first entry of kind for name.
func rewrite(kind, name string, f func(string) string) func(pre, post *[]ddlEntry) {
	return func(pre, post *[]ddlEntry) {
		for _, l := range []*[]ddlEntry{pre, post} {
			for i, e := range *l {
				if e.Kind == kind && e.Name == name {
					(*l)[i].SQL = f(e.SQL)
					return
				}
			}
		}
		panic("no " + kind + " entry for " + name)
	}
}

// addColumn puts a column before the first one of the clusters table.
func addColumn(col string) func(pre, post *[]ddlEntry) {
	return rewrite("TABLE", "clusters", func(sql string) string {
		return strings.Replace(sql, `"public"."clusters" (`, `"public"."clusters" (`+col+`, `, 1)
	})
}

// TestHostileSQL_RefusedEverywhere: bundles whose database layer carries SQL
// that the dump never writes (roles, functions, triggers, COPY TO PROGRAM,
// smuggled COMMITs, several statements in one entry, functions in defaults,
// types that are not types, grants, extensions, ...) are refused by `bundle
// verify`, `bundle extract`, `restore --dry-run=client` and `restore`, each with exit 7
// ("unsafe content") and a message naming the entry, and the target is left
// exactly as it was: no role, table, function, trigger or extension, and the
// marker file that COPY TO PROGRAM or ALTER SYSTEM would create is absent.
func TestHostileSQL_RefusedEverywhere(t *testing.T) {
	// Long and self-contained (its own databases, directories, namespace):
	// it runs beside the other long ones once the sequential tests are done.
	t.Parallel()
	ctx := context.Background()
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)

	src := assisted.NewDatabase(t, assisted.Scale{Clusters: 1, Hosts: 2, Events: 20, InventoryBytes: 300})
	var stream bytes.Buffer
	sum, err := pg.Dump(ctx, src.URL, &stream, pg.DumpOptions{ExcludeTables: pg.DefaultExcludeTables})
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	role := "kat_evil_" + hex.EncodeToString(suffix)
	// The PostgreSQL server runs on this machine: a command it ran would
	// leave this file.
	marker := filepath.Join(os.TempDir(), role)
	t.Cleanup(func() { _ = os.Remove(marker) })
	touch := "touch " + marker
	createRole := "CREATE ROLE " + role + " SUPERUSER LOGIN"

	cases := []sqlCase{
		{"create role", appendPost(ddlEntry{Kind: "INDEX", Schema: "public", Name: "x", SQL: createRole}),
			"CREATE ROLE statement is not allowed"},
		{"create table as select from pg_authid", rewrite("TABLE", "clusters", func(string) string {
			return `CREATE TABLE "public"."clusters" AS SELECT rolname, rolpassword FROM pg_catalog.pg_authid`
		}), "CREATE TABLE AS statement is not allowed"},
		{"function", prependPre(ddlEntry{Kind: "TABLE", Schema: "public", Name: "f",
			SQL: `CREATE FUNCTION public.kat_evil() RETURNS int LANGUAGE sql AS 'SELECT 1'`}), "CREATE FUNCTION statement is not allowed"},
		{"event trigger", appendPost(ddlEntry{Kind: "CONSTRAINT", Schema: "public", Name: "t",
			SQL: `CREATE EVENT TRIGGER kat_evil ON ddl_command_start EXECUTE FUNCTION pg_catalog.pg_reload_conf()`}), "statement is not allowed"},
		{"copy to program", appendPost(ddlEntry{Kind: "SEQUENCE SET", Schema: "public", Name: "events_id_seq",
			SQL: `COPY (SELECT 1) TO PROGRAM '` + touch + `'`}), "COPY statement is not allowed"},
		{"commit smuggling", rewrite("SCHEMA", "public", func(sql string) string { return sql + "; COMMIT; " + createRole }),
			"holds 3 statements"},
		{"two statements in one entry", rewrite("TABLE", "clusters", func(sql string) string {
			return sql + `; CREATE TABLE "public"."kat_extra" (a int)`
		}), "holds 2 statements"},
		{"do block", prependPre(ddlEntry{Kind: "TABLE", Schema: "public", Name: "x",
			SQL: `DO $$BEGIN EXECUTE '` + createRole + `'; END$$`}), "DO statement is not allowed"},
		{"alter system", appendPost(ddlEntry{Kind: "CLUSTER", Schema: "public", Name: "x",
			SQL: `ALTER SYSTEM SET archive_command = '` + touch + `'`}), "ALTER SYSTEM statement is not allowed"},
		{"set role", prependPre(ddlEntry{Kind: "TABLE OPTION", Schema: "public", Name: "clusters", SQL: `SET ROLE postgres`}),
			"VARIABLE SET statement is not allowed"},
		{"quote breaking out of an identifier", rewrite("TABLE", "clusters", func(string) string {
			return `CREATE TABLE "public"."clusters" (a int); ` + createRole + `; --" (a int)`
		}), "holds 2 statements"},
		{"default calling a function", addColumn(`"kat_evil" text DEFAULT pg_catalog.pg_read_file('/etc/passwd')`),
			`function "pg_catalog"."pg_read_file" is not allowed`},
		{"check running a query", addColumn(`"kat_evil" text CHECK (length(query_to_xml('SELECT rolpassword FROM pg_catalog.pg_authid', true, true, '')::text) > 0)`),
			`function "query_to_xml" is not allowed`},
		{"default with a sub-select", addColumn(`"kat_evil" text DEFAULT (SELECT rolpassword FROM pg_catalog.pg_authid LIMIT 1)`),
			"SUB LINK is not allowed"},
		{"type that is not a type", addColumn(`"kat_evil" pg_catalog.pg_authid`), `type "pg_catalog"."pg_authid" is neither`},
		{"grant", appendPost(ddlEntry{Kind: "CONSTRAINT", Schema: "public", Name: "x", SQL: `GRANT ALL ON SCHEMA public TO PUBLIC`}),
			"GRANT statement is not allowed"},
		{"extension", prependPre(ddlEntry{Kind: "EXTENSION", Schema: "public", Name: "dblink",
			SQL: `CREATE EXTENSION IF NOT EXISTS "dblink" WITH SCHEMA "public"`}), `extension "dblink" is not allowed`},
		{"set_config as a sequence value", appendPost(ddlEntry{Kind: "SEQUENCE SET", Schema: "public", Name: "x",
			SQL: `SELECT pg_catalog.set_config('role', 'postgres', false)`}), "only SELECT pg_catalog.setval"},
		{"index expression terminating backends", appendPost(ddlEntry{Kind: "INDEX", Schema: "public", Name: "kat_evil",
			SQL: `CREATE INDEX kat_evil ON public.clusters USING btree (pg_catalog.pg_terminate_backend(1))`}), `function "pg_catalog"."pg_terminate_backend" is not allowed`},
		{"comment on a role", appendPost(ddlEntry{Kind: "COMMENT", Schema: "public", Name: "x", SQL: `COMMENT ON ROLE postgres IS 'owned'`}),
			"COMMENT ON ROLE is not allowed"},
	}

	allowUnsigned := []string(nil)
	if strings.Contains(p.Run(t, "bundle", "verify", "--help").Stdout, "--allow-unsigned") {
		// Unsigned bundles are refused by default; these test the SQL check.
		allowUnsigned = []string{"--allow-unsigned"}
	}
	refused := func(t *testing.T, tc sqlCase, args ...string) {
		t.Helper()
		r := p.Run(t, append(args, allowUnsigned...)...)
		if r.ExitCode != 7 || !strings.Contains(r.Stderr, "unsafe SQL in the database stream") || !strings.Contains(r.Stderr, tc.want) {
			t.Fatalf("%s: exit %d, want 7 with %q\n%s", strings.Join(args[:2], " "), r.ExitCode, tc.want, r.Combined())
		}
	}
	layout := filepath.Join(t.TempDir(), "layout")
	refs := make([]string, len(cases))
	for i, tc := range cases {
		refs[i] = fmt.Sprintf("oci:%s:hostile-%d", layout, i)
		makeBundle(t, refs[i], bundleRegistryNone, recipient, bundle.CreateOptions{Database: editedDump{stream.Bytes(), sum, tc.edit}})
	}
	// Each case has its own database and directories; the commands are
	// CPU-bound (each parses the dump's SQL), so the cases run side by side.
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := emptyDatabase(t)
			extractDir := filepath.Join(t.TempDir(), "extracted")
			refused(t, tc, "bundle", "verify", refs[i], "--identity", identity)
			refused(t, tc, "bundle", "extract", refs[i], "--identity", identity, "--dir", extractDir)
			// A client dry run needs no cluster with --skip-resources.
			refused(t, tc, "restore", refs[i], "--identity", identity, "--db", db.URL, "--skip-files", "--skip-resources", "--dry-run=client")
			assertUntouched(t, db.URL, role, marker)
			if entries, _ := os.ReadDir(filepath.Dir(extractDir)); len(entries) != 0 {
				t.Errorf("the refused extract left %v", entries)
			}
		})
	}

	// A real restore, with cluster 0 for its journal: refused before it
	// writes anywhere.
	t.Run("restore", func(t *testing.T) {
		k := harness.SharedKube(t)
		ns := k.Namespace(t)
		kubeconfig := k.KubeconfigFor(t, harness.AdminUser, ns)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				db := emptyDatabase(t)
				refused(t, tc, "restore", refs[i], "--identity", identity, "--db", db.URL,
					"--skip-files", "--skip-resources", "--kubeconfig", kubeconfig, "-n", ns)
				assertUntouched(t, db.URL, role, marker)
				if cms, secrets := journalConfigMaps(t, k, ns), secretNames(t, k, ns); len(cms) != 0 || len(secrets) != 0 {
					t.Errorf("the refused restore wrote to cluster 0: journal %v, secrets %v", cms, secrets)
				}
			})
		}
	})

	// The same dump, unedited, restores: the refusals are the SQL's doing.
	t.Run("control: the unedited dump restores", func(t *testing.T) {
		ref := fmt.Sprintf("oci:%s:control", layout)
		makeBundle(t, ref, bundleRegistryNone, recipient, bundle.CreateOptions{Database: editedDump{stream.Bytes(), sum, func(_, _ *[]ddlEntry) {}}})
		db := emptyDatabase(t)
		r := p.Run(t, append([]string{"restore", ref, "--identity", identity, "--db", db.URL, "--skip-files", "--skip-resources",
			"--dry-run=client", "-o", "json"}, allowUnsigned...)...)
		if r.ExitCode != 0 {
			t.Fatalf("dry run of the unedited dump: exit %d\n%s", r.ExitCode, r.Combined())
		}
		var res struct {
			Database struct {
				Tables    int  `json:"tables"`
				NotLoaded bool `json:"notLoaded"`
			} `json:"database"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || !res.Database.NotLoaded || res.Database.Tables != len(sum.Tables) {
			t.Fatalf("dry run result: %v\n%s", err, r.Stdout)
		}
		// A client dry run writes nothing, not even in a rolled-back transaction.
		assertUntouched(t, db.URL, role, marker)
		if v := p.Run(t, append([]string{"bundle", "verify", ref, "--identity", identity}, allowUnsigned...)...); v.ExitCode != 0 {
			t.Fatalf("verify of the unedited dump: exit %d\n%s", v.ExitCode, v.Combined())
		}
	})
}

// assertUntouched checks that the target database holds nothing a hostile
// bundle could have left, and that no command ran on the server's machine.
func assertUntouched(t *testing.T, url, role, marker string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var roles, tables, funcs, triggers, extensions, stats int
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = $1),
		(SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'),
		(SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')),
		(SELECT count(*) FROM pg_catalog.pg_event_trigger),
		(SELECT count(*) FROM pg_catalog.pg_extension WHERE extname <> 'plpgsql'),
		(SELECT count(*) FROM pg_catalog.pg_file_settings WHERE name = 'archive_command' AND setting LIKE '%kat_evil%')`,
		role).Scan(&roles, &tables, &funcs, &triggers, &extensions, &stats)
	if err != nil {
		t.Fatal(err)
	}
	if roles+tables+funcs+triggers+extensions+stats != 0 {
		t.Errorf("the target changed: %d role(s) %s, %d relation(s), %d function(s), %d event trigger(s), %d extension(s), %d ALTER SYSTEM setting(s)",
			roles, role, tables, funcs, triggers, extensions, stats)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a command from the bundle ran on the database server: %s exists", marker)
	}
}
