package pg

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The catalog readers below run inside the dump's snapshot with search_path
// empty, so everything the server prints (format_type, pg_get_expr,
// pg_get_constraintdef, pg_get_indexdef, regproc) is schema-qualified and
// replays the same on any server. Objects that belong to an extension are left
// to CREATE EXTENSION.

// notExtensionMember is a SQL condition: the object (classid, oid) is not part
// of an extension.
func notExtensionMember(classid, oid string) string {
	return fmt.Sprintf(`NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = '%s'::pg_catalog.regclass AND e.objid = %s AND e.deptype = 'e')`, classid, oid)
}

// userSchemaCond is a SQL condition on namespace n: a user schema.
const userSchemaCond = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg\_temp\_%' AND n.nspname NOT LIKE 'pg\_toast\_temp\_%'`

type schemaDef struct {
	oid     uint32
	name    string
	comment *string
}

// readSchemas returns the schemas in scope: the requested ones, or every user
// schema that no extension owns.
func readSchemas(ctx context.Context, conn *pgx.Conn, want []string) ([]schemaDef, error) {
	rows, err := conn.Query(ctx, `SELECT n.oid, n.nspname, pg_catalog.obj_description(n.oid, 'pg_namespace')
		FROM pg_catalog.pg_namespace n
		WHERE `+userSchemaCond+` AND `+notExtensionMember("pg_catalog.pg_namespace", "n.oid")+`
		ORDER BY n.nspname`)
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	var all []schemaDef
	for rows.Next() {
		var s schemaDef
		if err := rows.Scan(&s.oid, &s.name, &s.comment); err != nil {
			return nil, fmt.Errorf("read schemas: %w", err)
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	if len(want) == 0 {
		return all, nil
	}
	var out []schemaDef
	for _, w := range want {
		found := false
		for _, s := range all {
			if s.name == w {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("schema %q not found in the source database", w)
		}
	}
	return out, nil
}

type extensionDef struct{ name, schema string }

func readExtensions(ctx context.Context, conn *pgx.Conn, schemaOIDs []uint32) ([]extensionDef, error) {
	rows, err := conn.Query(ctx, `SELECT e.extname, n.nspname FROM pg_catalog.pg_extension e
		JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname <> 'plpgsql' AND e.extnamespace = ANY($1)
		ORDER BY e.extname`, schemaOIDs)
	if err != nil {
		return nil, fmt.Errorf("read extensions: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (extensionDef, error) {
		var e extensionDef
		return e, r.Scan(&e.name, &e.schema)
	})
}

type typeDef struct {
	oid     uint32
	schema  string
	name    string
	kind    byte // e enum, d domain, r range, c composite
	comment *string
}

// readTypes returns user types in creation (OID) order, which is an order
// their dependencies allow.
func readTypes(ctx context.Context, conn *pgx.Conn, schemaOIDs []uint32) ([]typeDef, error) {
	rows, err := conn.Query(ctx, `SELECT t.oid, n.nspname, t.typname, t.typtype::text, pg_catalog.obj_description(t.oid, 'pg_type')
		FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
		WHERE t.typnamespace = ANY($1) AND t.typtype IN ('e', 'd', 'r', 'c')
		  AND (t.typtype <> 'c' OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c')
		  AND `+notExtensionMember("pg_catalog.pg_type", "t.oid")+`
		ORDER BY t.oid`, schemaOIDs)
	if err != nil {
		return nil, fmt.Errorf("read types: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (typeDef, error) {
		var t typeDef
		var kind string
		err := r.Scan(&t.oid, &t.schema, &t.name, &kind, &t.comment)
		t.kind = kind[0]
		return t, err
	})
}

type tableDef struct {
	oid          uint32
	schema, name string
	unlogged     bool
	reloptions   []string
	toastOptions []string
	replident    string
	comment      *string
	columns      []columnDef
	checks       []constraintDef // validated CHECK constraints, created with the table
	dumpData     bool
}

func (t *tableDef) qualified() string { return qualified(t.schema, t.name) }

// copyColumns are the columns that COPY moves: all but generated ones.
func (t *tableDef) copyColumns() []string {
	var cols []string
	for _, c := range t.columns {
		if c.generated == "" {
			cols = append(cols, c.name)
		}
	}
	return cols
}

type columnDef struct {
	num       int16
	name, typ string
	// typOID is the column's type, elemOID its element type when it is an
	// array (0 otherwise): they decide the table's COPY format.
	typOID, elemOID uint32
	notNull         bool
	def             *string
	generated       string // "s" for a stored generated column
	identity        string // "a" always, "d" by default
	collation       *string
	statTarget      int
	storage         string // set only when it differs from the type's default
	options         []string
	compression     string
	comment         *string
}

type constraintDef struct {
	table        uint32
	schema, name string // schema and name of the constraint's table come from the table
	conname      string
	kind         byte
	def          string
	validated    bool
	comment      *string
	indexOID     uint32
	clustered    bool
	replIdent    bool
}

// readTables returns the ordinary tables in scope, filtered by include and
// exclude patterns, with their columns and CHECK constraints.
func readTables(ctx context.Context, conn *pgx.Conn, schemaOIDs []uint32, version int, opts DumpOptions) ([]*tableDef, error) {
	rows, err := conn.Query(ctx, `SELECT c.oid, n.nspname, c.relname, c.relpersistence = 'u', c.reloptions, t.reloptions,
			c.relreplident::text, pg_catalog.obj_description(c.oid, 'pg_class')
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_catalog.pg_class t ON t.oid = c.reltoastrelid
		WHERE c.relkind = 'r' AND c.relnamespace = ANY($1) AND `+notExtensionMember("pg_catalog.pg_class", "c.oid")+`
		ORDER BY n.nspname, c.relname`, schemaOIDs)
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*tableDef, error) {
		t := &tableDef{}
		err := r.Scan(&t.oid, &t.schema, &t.name, &t.unlogged, &t.reloptions, &t.toastOptions, &t.replident, &t.comment)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	var tables []*tableDef
	for _, t := range all {
		if len(opts.IncludeTables) > 0 && !matchTable(opts.IncludeTables, t.schema, t.name) {
			continue
		}
		if matchTable(opts.ExcludeTables, t.schema, t.name) {
			continue
		}
		t.dumpData = !matchTable(opts.ExcludeTableData, t.schema, t.name)
		tables = append(tables, t)
	}
	if err := readColumns(ctx, conn, tables, version >= 140000); err != nil {
		return nil, err
	}
	if err := readChecks(ctx, conn, tables); err != nil {
		return nil, err
	}
	return tables, nil
}

// matchTable reports whether schema.name matches one of the patterns ("table"
// or "schema.table", path.Match syntax).
func matchTable(patterns []string, schema, name string) bool {
	for _, p := range patterns {
		target := name
		if strings.Contains(p, ".") {
			target = schema + "." + name
		}
		if ok, _ := path.Match(p, target); ok {
			return true
		}
	}
	return false
}

func tableOIDs(tables []*tableDef) []uint32 {
	oids := make([]uint32, len(tables))
	for i, t := range tables {
		oids[i] = t.oid
	}
	return oids
}

func tableByOID(tables []*tableDef) map[uint32]*tableDef {
	m := make(map[uint32]*tableDef, len(tables))
	for _, t := range tables {
		m[t.oid] = t
	}
	return m
}

// readColumns reads the columns of tables. Of a column's options it keeps the
// user-settable ones (n_distinct, n_distinct_inherited): servers may keep
// their own, internal ones there, which no other server accepts — Debian's
// PostgreSQL 15.20 stores a pg_attver=<number> on every column, and its own
// pg_dump leaves it out likewise.
func readColumns(ctx context.Context, conn *pgx.Conn, tables []*tableDef, compression bool) error {
	compressionExpr := "''"
	if compression {
		compressionExpr = "a.attcompression::text"
	}
	rows, err := conn.Query(ctx, `SELECT a.attrelid, a.attnum, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),
			a.atttypid, CASE WHEN ty.typcategory = 'A' THEN ty.typelem ELSE 0::pg_catalog.oid END,
			a.attnotnull, pg_catalog.pg_get_expr(d.adbin, d.adrelid), a.attgenerated::text, a.attidentity::text,
			CASE WHEN a.attcollation <> ty.typcollation THEN
				(SELECT pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname)
				 FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
				 WHERE co.oid = a.attcollation) END,
			COALESCE(a.attstattarget::int, -1),
			CASE WHEN a.attstorage <> ty.typstorage THEN a.attstorage::text ELSE '' END,
			ARRAY(SELECT o FROM pg_catalog.unnest(a.attoptions) o WHERE o NOT LIKE 'pg\_%'),
			`+compressionExpr+`, pg_catalog.col_description(a.attrelid, a.attnum)
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid
		LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attrelid, a.attnum`, tableOIDs(tables))
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	byOID := tableByOID(tables)
	var rel uint32
	var c columnDef
	_, err = pgx.ForEachRow(rows, []any{&rel, &c.num, &c.name, &c.typ, &c.typOID, &c.elemOID, &c.notNull, &c.def, &c.generated, &c.identity,
		&c.collation, &c.statTarget, &c.storage, &c.options, &c.compression, &c.comment}, func() error {
		byOID[rel].columns = append(byOID[rel].columns, c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	return nil
}

func readChecks(ctx context.Context, conn *pgx.Conn, tables []*tableDef) error {
	rows, err := conn.Query(ctx, `SELECT c.conrelid, c.conname, pg_catalog.pg_get_constraintdef(c.oid), c.convalidated,
			pg_catalog.obj_description(c.oid, 'pg_constraint')
		FROM pg_catalog.pg_constraint c
		WHERE c.conrelid = ANY($1) AND c.contype = 'c' AND c.conislocal
		ORDER BY c.conrelid, c.conname`, tableOIDs(tables))
	if err != nil {
		return fmt.Errorf("read check constraints: %w", err)
	}
	byOID := tableByOID(tables)
	var k constraintDef
	_, err = pgx.ForEachRow(rows, []any{&k.table, &k.conname, &k.def, &k.validated, &k.comment}, func() error {
		t := byOID[k.table]
		k.kind = 'c'
		k.schema, k.name = t.schema, t.name
		t.checks = append(t.checks, k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read check constraints: %w", err)
	}
	return nil
}

// readConstraints returns primary key, unique and exclusion constraints, then
// foreign keys (which need the former to exist), of the tables in scope.
func readConstraints(ctx context.Context, conn *pgx.Conn, tables []*tableDef) ([]constraintDef, error) {
	rows, err := conn.Query(ctx, `SELECT c.conrelid, c.conname, c.contype::text, pg_catalog.pg_get_constraintdef(c.oid), c.convalidated,
			pg_catalog.obj_description(c.oid, 'pg_constraint'), c.conindid, COALESCE(i.indisclustered, false),
			COALESCE(i.indisreplident, false),
			CASE WHEN c.contype = 'f' THEN c.confrelid ELSE 0 END
		FROM pg_catalog.pg_constraint c
		LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.conindid AND c.contype IN ('p', 'u', 'x')
		WHERE c.conrelid = ANY($1) AND c.contype IN ('p', 'u', 'x', 'f')
		ORDER BY c.contype = 'f', c.conrelid, c.conname`, tableOIDs(tables))
	if err != nil {
		return nil, fmt.Errorf("read constraints: %w", err)
	}
	byOID := tableByOID(tables)
	var out []constraintDef
	var k constraintDef
	var kind string
	var refTable uint32
	_, err = pgx.ForEachRow(rows, []any{&k.table, &k.conname, &kind, &k.def, &k.validated, &k.comment, &k.indexOID, &k.clustered, &k.replIdent, &refTable}, func() error {
		k.kind = kind[0]
		if k.kind == 'f' && byOID[refTable] == nil {
			return nil // references a table left out of the dump
		}
		t := byOID[k.table]
		k.schema, k.name = t.schema, t.name
		out = append(out, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read constraints: %w", err)
	}
	return out, nil
}

type indexDef struct {
	table        uint32
	schema, name string
	def          string
	clustered    bool
	replIdent    bool
	comment      *string
}

// readIndexes returns the indexes that no constraint owns.
func readIndexes(ctx context.Context, conn *pgx.Conn, tables []*tableDef) ([]indexDef, error) {
	rows, err := conn.Query(ctx, `SELECT i.indrelid, n.nspname, ic.relname, pg_catalog.pg_get_indexdef(i.indexrelid),
			i.indisclustered, i.indisreplident, pg_catalog.obj_description(i.indexrelid, 'pg_class')
		FROM pg_catalog.pg_index i
		JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
		WHERE i.indrelid = ANY($1)
		  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
			WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid AND c.contype IN ('p', 'u', 'x'))
		ORDER BY n.nspname, ic.relname`, tableOIDs(tables))
	if err != nil {
		return nil, fmt.Errorf("read indexes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (indexDef, error) {
		var x indexDef
		return x, r.Scan(&x.table, &x.schema, &x.name, &x.def, &x.clustered, &x.replIdent, &x.comment)
	})
}
