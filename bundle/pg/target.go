package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Staging schemas (staged.go) hold a restore's objects until its final
// transaction moves them into their schemas. They are marked as ours twice, by
// name and by comment, are never part of what makes a target non-empty, and
// a restore drops every one it finds (under the staging lock, so none is in
// use): what a killed restore left behind.
const (
	stagingPrefix  = "kubectl_assisted_staging_"
	stagingComment = "kubectl-assisted restore staging"
	// stagingCond is true for a namespace n that is one of our staging schemas.
	stagingCond = `(n.nspname LIKE 'kubectl\_assisted\_staging\_%' AND coalesce(pg_catalog.obj_description(n.oid, 'pg_namespace'), '') LIKE 'kubectl-assisted restore staging%')`
)

// targetObjectsQuery lists what makes a database non-empty: user schemas other
// than public, and the relations, types and routines in user schemas, leaving
// out what extensions own (CREATE EXTENSION IF NOT EXISTS keeps those) and
// our staging schemas.
const targetObjectsQuery = `
SELECT kind, schema, name, drop FROM (
	SELECT 1 AS o, 'schema' AS kind, n.nspname AS schema, n.nspname AS name,
		'DROP SCHEMA ' || pg_catalog.quote_ident(n.nspname) || ' CASCADE' AS drop
	FROM pg_catalog.pg_namespace n
	WHERE ` + userSchemaCond + ` AND n.nspname <> 'public' AND NOT ` + stagingCond + `
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND e.objid = n.oid AND e.deptype = 'e')
	UNION ALL
	SELECT 2, CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
			WHEN 'S' THEN 'sequence' ELSE 'foreign table' END,
		n.nspname, c.relname,
		'DROP ' || CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'TABLE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
			WHEN 'S' THEN 'SEQUENCE' ELSE 'FOREIGN TABLE' END
		|| ' IF EXISTS ' || pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) || ' CASCADE'
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE ` + userSchemaCond + ` AND NOT ` + stagingCond + ` AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND NOT c.relispartition
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND e.objid = c.oid AND e.deptype = 'e')
	UNION ALL
	SELECT 3, CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' ELSE 'function' END, n.nspname, p.proname,
		'DROP ROUTINE IF EXISTS ' || p.oid::pg_catalog.regprocedure::text || ' CASCADE'
	FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
	WHERE ` + userSchemaCond + ` AND NOT ` + stagingCond + `
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND e.objid = p.oid AND e.deptype IN ('e', 'i'))
	UNION ALL
	SELECT 4, CASE t.typtype WHEN 'd' THEN 'domain' ELSE 'type' END, n.nspname, t.typname,
		'DROP ' || CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END || ' IF EXISTS '
		|| pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(t.typname) || ' CASCADE'
	FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
	WHERE ` + userSchemaCond + ` AND NOT ` + stagingCond + ` AND t.typtype IN ('b', 'e', 'd', 'r', 'c') AND t.typcategory <> 'A'
	  AND (t.typtype <> 'c' OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c')
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND e.objid = t.oid AND e.deptype = 'e')
) x ORDER BY o, schema, name`

// maxListed bounds how many objects a TargetNotEmptyError names.
const maxListed = 10

// prepareTarget refuses a non-empty target or, with replace, drops what is in
// it, inside the restore transaction.
func prepareTarget(ctx context.Context, tx pgx.Tx, replace bool) error {
	rows, err := tx.Query(ctx, targetObjectsQuery)
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	type found struct{ kind, schema, name, drop string }
	objs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (found, error) {
		var f found
		return f, r.Scan(&f.kind, &f.schema, &f.name, &f.drop)
	})
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	if len(objs) == 0 {
		return nil
	}
	if !replace {
		e := &TargetNotEmptyError{}
		for i, o := range objs {
			if i == maxListed {
				e.More = len(objs) - maxListed
				break
			}
			name := o.schema + "." + o.name
			if o.kind == "schema" {
				name = o.name
			}
			e.Objects = append(e.Objects, o.kind+" "+name)
		}
		return e
	}
	for _, o := range objs {
		if _, err := tx.Exec(ctx, o.drop); err != nil {
			return fmt.Errorf("replace: drop %s %s.%s: %w", o.kind, o.schema, o.name, err)
		}
	}
	return nil
}

// CheckTarget connects to the database at connString and returns a
// *TargetNotEmptyError when it holds objects Restore would refuse (the same
// test Restore runs inside its transaction), or nil when it is empty. It
// changes nothing (one READ ONLY transaction, rolled back): a restore calls it
// before its first write anywhere.
func CheckTarget(ctx context.Context, connString string) error {
	tx, done, err := readOnlyTarget(ctx, connString)
	if err != nil {
		return err
	}
	defer done()
	return prepareTarget(ctx, tx, false)
}

// readOnlyTarget connects to the target and opens a READ ONLY transaction on
// it; done rolls it back and closes the connection.
func readOnlyTarget(ctx context.Context, connString string) (pgx.Tx, func(), error) {
	conn, err := connect(ctx, connString, "target")
	if err != nil {
		return nil, nil, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, nil, fmt.Errorf("inspect target database: %w", err)
	}
	return tx, func() {
		_ = tx.Rollback(context.Background())
		_ = conn.Close(context.Background())
	}, nil
}
