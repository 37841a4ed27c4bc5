// Package pgsnap describes a PostgreSQL database as text that does not depend
// on the server's major version, so a database dumped on one major and
// restored on another can be compared with the source: the catalog (schemas,
// tables, columns with their types, defaults and NOT NULL, constraints,
// indexes, sequences with their values, types, views, routines, triggers,
// comments) and every table's rows, ordered, as text.
//
// pg_dump cannot do this across majors (it refuses servers newer than itself)
// and the servers the tests run carry no client tools, so the queries here read
// pg_catalog directly, using only what PostgreSQL 12 and later all have.
package pgsnap

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Snapshot is a database's catalog and rows as sorted text lines.
type Snapshot struct {
	// Catalog lines: one per object or attribute, "kind name: definition".
	Catalog []string
	// Rows by table ("schema.table"): every row as its record text, sorted
	// bytewise.
	Rows map[string][]string
}

// Column options named pg_* are the server's own (Debian's 15.20 numbers every
// column with a pg_attver option), not part of the schema, and left out.

// sessionSettings fix every setting that changes how values print.
var sessionSettings = []string{
	"SET TimeZone = 'UTC'",
	"SET DateStyle = 'ISO, MDY'",
	"SET IntervalStyle = 'postgres'",
	"SET extra_float_digits = 1",
	"SET bytea_output = 'hex'",
	"SET search_path = ''",
	"SET lc_monetary = 'C'",
}

// userNS is the condition that keeps the namespace n to user schemas.
const userNS = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)'`

// notExtension keeps out objects an extension owns (their definitions differ
// with the extension's version, which differs across majors).
func notExtension(catalog, oid string) string {
	return `NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = '` + catalog +
		`'::pg_catalog.regclass AND e.objid = ` + oid + ` AND e.deptype = 'e')`
}

// catalogQueries each return one text column, a line of the catalog.
var catalogQueries = []struct{ name, sql string }{
	{"schemas", `SELECT 'schema ' || quote_ident(n.nspname) FROM pg_catalog.pg_namespace n WHERE ` + userNS + ` AND ` + notExtension("pg_catalog.pg_namespace", "n.oid")},
	{"extensions", `SELECT 'extension ' || quote_ident(x.extname) || ' in ' || quote_ident(n.nspname) FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace WHERE x.extname <> 'plpgsql'`},
	{"relations", `SELECT 'relation ' || c.oid::pg_catalog.regclass::text || ': kind ' || c.relkind::text || ' persistence ' || c.relpersistence::text
		|| ' options ' || coalesce(array_to_string(c.reloptions, ','), '') || ' replica identity ' || c.relreplident::text
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE ` + userNS + ` AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND ` + notExtension("pg_catalog.pg_class", "c.oid")},
	{"columns", `SELECT 'column ' || c.oid::pg_catalog.regclass::text || '.' || quote_ident(a.attname)
		|| ' #' || row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum)
		|| ': ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
		|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		|| CASE WHEN a.attgenerated <> '' THEN ' generated ' || a.attgenerated::text || ' as ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid)
			WHEN d.adbin IS NOT NULL THEN ' default ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid) ELSE '' END
		|| CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
		|| CASE WHEN a.attcollation <> t.typcollation THEN ' collate ' || coalesce((SELECT quote_ident(co.collname) FROM pg_catalog.pg_collation co WHERE co.oid = a.attcollation), '?') ELSE '' END
		|| CASE WHEN a.attstattarget > 0 THEN ' statistics ' || a.attstattarget ELSE '' END
		|| CASE WHEN a.attstorage <> t.typstorage THEN ' storage ' || a.attstorage::text ELSE '' END
		|| coalesce(' options ' || nullif(array_to_string(ARRAY(SELECT o FROM unnest(a.attoptions) o WHERE o NOT LIKE 'pg\_%'), ','), ''), '')
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE ` + userNS + ` AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c') AND a.attnum > 0 AND NOT a.attisdropped
		  AND (c.relkind <> 'c' OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type ct WHERE ct.typrelid = c.oid AND NOT ` + notExtension("pg_catalog.pg_type", "ct.oid") + `))
		  AND ` + notExtension("pg_catalog.pg_class", "c.oid")},
	{"constraints", `SELECT 'constraint ' || coalesce(r.oid::pg_catalog.regclass::text, 'domain ' || ty.oid::pg_catalog.regtype::text) || ' ' || quote_ident(co.conname)
		|| ': ' || co.contype::text || ' ' || pg_catalog.pg_get_constraintdef(co.oid)
		|| CASE WHEN co.condeferrable THEN ' deferrable' ELSE '' END
		|| CASE WHEN co.condeferred THEN ' deferred' ELSE '' END
		|| CASE WHEN NOT co.convalidated THEN ' not valid' ELSE '' END
		FROM pg_catalog.pg_constraint co
		JOIN pg_catalog.pg_namespace n ON n.oid = co.connamespace
		LEFT JOIN pg_catalog.pg_class r ON r.oid = co.conrelid AND co.conrelid <> 0
		LEFT JOIN pg_catalog.pg_type ty ON ty.oid = co.contypid AND co.contypid <> 0
		WHERE ` + userNS + ` AND ` + notExtension("pg_catalog.pg_constraint", "co.oid")},
	{"indexes", `SELECT 'index ' || i.indexrelid::pg_catalog.regclass::text || ': ' || pg_catalog.pg_get_indexdef(i.indexrelid)
		|| CASE WHEN i.indisclustered THEN ' clustered' ELSE '' END
		|| CASE WHEN i.indisreplident THEN ' replica identity' ELSE '' END
		|| CASE WHEN NOT i.indisvalid THEN ' invalid' ELSE '' END
		FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE ` + userNS + ` AND ` + notExtension("pg_catalog.pg_class", "i.indrelid")},
	{"sequences", `SELECT 'sequence ' || s.seqrelid::pg_catalog.regclass::text || ': ' || s.seqtypid::pg_catalog.regtype::text
		|| ' start ' || s.seqstart || ' increment ' || s.seqincrement || ' min ' || s.seqmin || ' max ' || s.seqmax
		|| ' cache ' || s.seqcache || CASE WHEN s.seqcycle THEN ' cycle' ELSE '' END
		|| coalesce(' owned by ' || (SELECT d.refobjid::pg_catalog.regclass::text || '.' || quote_ident(a.attname)
			FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
			WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = s.seqrelid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
			  AND d.deptype IN ('a', 'i') LIMIT 1), '')
		FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE ` + userNS + ` AND ` + notExtension("pg_catalog.pg_class", "c.oid")},
	{"types", `SELECT 'type ' || t.oid::pg_catalog.regtype::text || ': ' || t.typtype::text
		|| CASE t.typtype
			WHEN 'e' THEN ' (' || (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid) || ')'
			WHEN 'd' THEN ' over ' || pg_catalog.format_type(t.typbasetype, t.typtypmod) || CASE WHEN t.typnotnull THEN ' not null' ELSE '' END
				|| coalesce(' default ' || pg_catalog.pg_get_expr(t.typdefaultbin, 0), '')
			WHEN 'r' THEN ' over ' || (SELECT rg.rngsubtype::pg_catalog.regtype::text FROM pg_catalog.pg_range rg WHERE rg.rngtypid = t.oid)
			ELSE '' END
		FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
		WHERE ` + userNS + ` AND (t.typtype IN ('e', 'd', 'r', 'b')
			OR (t.typtype = 'c' AND (SELECT rc.relkind FROM pg_catalog.pg_class rc WHERE rc.oid = t.typrelid) = 'c'))
		  AND t.typcategory <> 'A' AND ` + notExtension("pg_catalog.pg_type", "t.oid")},
	{"views", `SELECT 'view ' || c.oid::pg_catalog.regclass::text || ': ' || pg_catalog.pg_get_viewdef(c.oid)
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE ` + userNS + ` AND c.relkind IN ('v', 'm') AND ` + notExtension("pg_catalog.pg_class", "c.oid")},
	{"routines", `SELECT 'routine ' || p.oid::pg_catalog.regprocedure::text || ': ' || pg_catalog.pg_get_functiondef(p.oid)
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE ` + userNS + ` AND p.prokind IN ('f', 'p') AND ` + notExtension("pg_catalog.pg_proc", "p.oid")},
	{"triggers", `SELECT 'trigger ' || tg.tgrelid::pg_catalog.regclass::text || ' ' || quote_ident(tg.tgname) || ': ' || pg_catalog.pg_get_triggerdef(tg.oid)
		FROM pg_catalog.pg_trigger tg JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE ` + userNS + ` AND NOT tg.tgisinternal`},
	{"comments", `SELECT 'comment on ' || CASE d.classoid
			WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN d.objoid::pg_catalog.regclass::text
				|| CASE WHEN d.objsubid > 0 THEN '.' || quote_ident((SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = d.objoid AND a.attnum = d.objsubid)) ELSE '' END
			WHEN 'pg_catalog.pg_namespace'::pg_catalog.regclass THEN 'schema ' || quote_ident((SELECT nspname FROM pg_catalog.pg_namespace WHERE oid = d.objoid))
			WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN 'constraint ' || (SELECT coalesce(nullif(co.conrelid, 0)::pg_catalog.regclass::text, co.contypid::pg_catalog.regtype::text) || ' ' || quote_ident(co.conname) FROM pg_catalog.pg_constraint co WHERE co.oid = d.objoid)
			WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN 'type ' || d.objoid::pg_catalog.regtype::text
			WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN 'routine ' || d.objoid::pg_catalog.regprocedure::text
			ELSE d.classoid::pg_catalog.regclass::text || ' ' || d.objoid::text END
		|| ': ' || d.description
		FROM pg_catalog.pg_description d
		WHERE d.classoid IN ('pg_catalog.pg_class'::pg_catalog.regclass, 'pg_catalog.pg_namespace'::pg_catalog.regclass, 'pg_catalog.pg_constraint'::pg_catalog.regclass,
			'pg_catalog.pg_type'::pg_catalog.regclass, 'pg_catalog.pg_proc'::pg_catalog.regclass)
		  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = d.classoid AND e.objid = d.objoid AND e.deptype = 'e')
		  AND coalesce((SELECT ` + userNS + ` FROM pg_catalog.pg_namespace n WHERE n.oid = CASE d.classoid
			WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = d.objoid)
			WHEN 'pg_catalog.pg_namespace'::pg_catalog.regclass THEN d.objoid
			WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT connamespace FROM pg_catalog.pg_constraint WHERE oid = d.objoid)
			WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = d.objoid)
			WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid = d.objoid) END), false)`},
}

// Take reads the snapshot of the database at url in one REPEATABLE READ,
// READ ONLY transaction.
func Take(ctx context.Context, url string) (*Snapshot, error) {
	return TakeAdjusted(ctx, url)
}

// TakeAdjusted is Take of the database as the statements in adjust would
// leave it: they run inside the snapshot's transaction, which is rolled back,
// so the database itself is not changed. A test states with them what a
// restore is documented to change (for example a column it resets).
func TakeAdjusted(ctx context.Context, url string, adjust ...string) (*Snapshot, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	mode := pgx.ReadOnly
	if len(adjust) > 0 {
		mode = pgx.ReadWrite
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: mode})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, a := range adjust {
		if _, err := tx.Exec(ctx, a); err != nil {
			return nil, fmt.Errorf("adjust %q: %w", a, err)
		}
	}
	for _, s := range sessionSettings {
		if _, err := tx.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	snap := &Snapshot{Rows: map[string][]string{}}
	for _, q := range catalogQueries {
		lines, err := textColumn(ctx, tx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", q.name, err)
		}
		snap.Catalog = append(snap.Catalog, lines...)
		// Sequence values are read from each sequence itself.
		if q.name == "sequences" {
			seqs, err := textColumn(ctx, tx, `SELECT c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE `+userNS+` AND c.relkind = 'S' AND `+notExtension("pg_catalog.pg_class", "c.oid"))
			if err != nil {
				return nil, fmt.Errorf("catalog sequences: %w", err)
			}
			for _, s := range seqs {
				var v string
				if err := tx.QueryRow(ctx, `SELECT last_value::text || ' called ' || is_called::text FROM `+s).Scan(&v); err != nil {
					return nil, fmt.Errorf("sequence %s: %w", s, err)
				}
				snap.Catalog = append(snap.Catalog, "sequence value "+s+": "+v)
			}
		}
	}
	sort.Strings(snap.Catalog)

	tables, err := textColumn(ctx, tx, `SELECT c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE `+userNS+` AND c.relkind IN ('r', 'p') AND `+notExtension("pg_catalog.pg_class", "c.oid"))
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	for _, table := range tables {
		rows, err := textColumn(ctx, tx, `SELECT r::text FROM ONLY `+table+` AS r`)
		if err != nil {
			return nil, fmt.Errorf("rows of %s: %w", table, err)
		}
		sort.Strings(rows)
		snap.Rows[table] = rows
	}
	return snap, nil
}

func textColumn(ctx context.Context, tx pgx.Tx, sql string) ([]string, error) {
	rows, err := tx.Query(ctx, sql, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var s *string
		if err := r.Scan(&s); err != nil {
			return "", err
		}
		if s == nil {
			return "<NULL>", nil
		}
		return *s, nil
	})
}

// RowCount is the number of rows over all tables.
func (s *Snapshot) RowCount() int {
	n := 0
	for _, r := range s.Rows {
		n += len(r)
	}
	return n
}

// Diff lists the differences between want and got, at most max lines (0: all).
func Diff(want, got *Snapshot, max int) []string {
	var out []string
	add := func(format string, args ...any) bool {
		if max > 0 && len(out) == max {
			out = append(out, "...")
			return false
		}
		out = append(out, fmt.Sprintf(format, args...))
		return true
	}
	if !diffLines("catalog", want.Catalog, got.Catalog, add) {
		return out
	}
	var tables []string
	for t := range want.Rows {
		tables = append(tables, t)
	}
	for t := range got.Rows {
		if _, ok := want.Rows[t]; !ok {
			tables = append(tables, t)
		}
	}
	sort.Strings(tables)
	for _, t := range tables {
		if !diffLines("table "+t, want.Rows[t], got.Rows[t], add) {
			return out
		}
	}
	return out
}

// diffLines reports the lines only in want ("-") and only in got ("+"); both
// are sorted.
func diffLines(what string, want, got []string, add func(string, ...any) bool) bool {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			if !add("%s: - %s", what, clip(want[i])) {
				return false
			}
			i++
		case i == len(want) || got[j] < want[i]:
			if !add("%s: + %s", what, clip(got[j])) {
				return false
			}
			j++
		default:
			i++
			j++
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return strings.ReplaceAll(s, "\n", `\n`)
}
