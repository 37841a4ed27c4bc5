package harness

import (
	"context"

	"sort"
	"strings"
	"testing"
)

// schemaFacts describes the public tables of a database in the terms the
// project relies on: each column's type, NOT NULL and default; CHECK and
// primary-key constraints; indexes; storage options. One line per fact.
func schemaFacts(t *testing.T, db *Database) []string {
	t.Helper()
	c := db.Connect(t)
	rows, err := c.Query(context.Background(), `
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
       || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || r.relname || ' ' || k.conname || ' ' || k.contype::text || ' ' || pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class r ON r.oid = k.conrelid
WHERE r.relnamespace = 'public'::regnamespace AND k.contype IN ('p', 'c', 'u', 'f')
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class r ON r.oid = i.indrelid
WHERE r.relnamespace = 'public'::regnamespace AND NOT i.indisprimary
UNION ALL
SELECT 'options ' || c.relname || ' ' || array_to_string(c.reloptions, ',')
FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.reloptions IS NOT NULL
UNION ALL
SELECT 'sequence ' || s.relname || ' owned by ' || t.relname || '.' || a.attname
FROM pg_class s JOIN pg_depend dp ON dp.objid = s.oid AND dp.deptype IN ('a', 'i')
JOIN pg_class t ON t.oid = dp.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = dp.refobjsubid
WHERE s.relkind = 'S' AND s.relnamespace = 'public'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The project's own DDL loads, has the twelve tables the project moves, and
// answers with the real constraints (hosts' key is (id, infra_env_id); events
// ids come from a sequence; clusters' load_balancer_type is checked).
func TestOwnAssistedSchema_Loads(t *testing.T) {
	db := NewDatabase(t)
	LoadSQLFile(t, db.URL, OwnAssistedSchemaPath())
	facts := schemaFacts(t, db)
	tables := map[string]bool{}
	for _, f := range facts {
		if strings.HasPrefix(f, "column ") {
			tables[strings.SplitN(strings.TrimPrefix(f, "column "), ".", 2)[0]] = true
		}
	}
	if len(tables) != 12 {
		t.Fatalf("%d tables, want 12: %v", len(tables), tables)
	}
	c := db.Connect(t)
	ctx := context.Background()
	if _, err := c.Exec(ctx, `INSERT INTO hosts (id, infra_env_id) VALUES ('a', 'b'), ('a', 'b')`); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate host key: err = %v", err)
	}
	var id int64
	if err := c.QueryRow(ctx, `INSERT INTO events (name) VALUES ('x') RETURNING id`).Scan(&id); err != nil || id != 1 {
		t.Fatalf("events id = %d, err = %v", id, err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO clusters (id, load_balancer_type) VALUES ('c', 'bogus')`); err == nil || !strings.Contains(err.Error(), "chk_clusters_load_balancer_type") {
		t.Fatalf("bad load_balancer_type: err = %v", err)
	}
}

// The own DDL states the same facts as the real schema (a pg_dump of the
// service's database), whenever ../shared/fixtures/assisted-schema.sql is there.
func TestAssistedSchema_MatchesReal(t *testing.T) {
	real := RealAssistedSchemaPath()
	if real == "" {
		t.Log("../shared/fixtures/assisted-schema.sql absent: nothing to compare with (TestOwnAssistedSchema_Loads checks the own DDL)")
		return
	}
	ownDB, realDB := NewDatabase(t), NewDatabase(t)
	LoadSQLFile(t, ownDB.URL, OwnAssistedSchemaPath())
	LoadSQLFile(t, realDB.URL, real)
	own, want := schemaFacts(t, ownDB), schemaFacts(t, realDB)
	missing, extra := diffSorted(want, own)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("own DDL differs from the real schema\nonly in the real one:\n  %s\nonly in the own one:\n  %s",
			strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
	if len(own) < 250 {
		t.Fatalf("only %d schema facts compared", len(own))
	}
}

func diffSorted(a, b []string) (onlyA, onlyB []string) {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	for _, x := range a {
		if !mb[x] {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !ma[x] {
			onlyB = append(onlyB, x)
		}
	}
	return
}
