package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// unsupportedQuery lists the objects in scope that Dump does not reproduce.
// Dump refuses them rather than produce a restore that silently lacks them.
// Grants, ownership and planner statistics are not objects and are not listed:
// a restore belongs to the user who runs it, and ANALYZE rebuilds statistics.
const unsupportedQuery = `
SELECT kind || ' ' || name FROM (
	SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
			WHEN 'p' THEN 'partitioned table' ELSE 'relation' END AS kind,
		n.nspname || '.' || c.relname AS name
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relnamespace = ANY($1) AND c.relkind IN ('v', 'm', 'f', 'p')
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND e.objid = c.oid AND e.deptype = 'e')
	UNION ALL
	SELECT 'inherited or partition table', n.nspname || '.' || c.relname
	FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE i.inhrelid = ANY($2) OR i.inhparent = ANY($2)
	UNION ALL
	SELECT CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' ELSE 'function' END, n.nspname || '.' || p.proname
	FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
	WHERE p.pronamespace = ANY($1)
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND e.objid = p.oid AND e.deptype IN ('e', 'i'))
	UNION ALL
	SELECT 'trigger', tg.tgname || ' on ' || n.nspname || '.' || c.relname
	FROM pg_catalog.pg_trigger tg JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE tg.tgrelid = ANY($2) AND NOT tg.tgisinternal
	UNION ALL
	SELECT 'rule', r.rulename || ' on ' || n.nspname || '.' || c.relname
	FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE r.ev_class = ANY($2)
	UNION ALL
	SELECT 'row security policy', pol.polname || ' on ' || n.nspname || '.' || c.relname
	FROM pg_catalog.pg_policy pol JOIN pg_catalog.pg_class c ON c.oid = pol.polrelid
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE pol.polrelid = ANY($2)
	UNION ALL
	SELECT 'row level security', n.nspname || '.' || c.relname
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE c.oid = ANY($2) AND c.relrowsecurity
	UNION ALL
	SELECT 'extended statistics', n.nspname || '.' || s.stxname
	FROM pg_catalog.pg_statistic_ext s JOIN pg_catalog.pg_namespace n ON n.oid = s.stxnamespace
	WHERE s.stxrelid = ANY($2)
	UNION ALL
	SELECT 'base type', n.nspname || '.' || t.typname
	FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
	WHERE t.typnamespace = ANY($1) AND t.typtype IN ('b', 'p') AND t.typcategory <> 'A'
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND e.objid = t.oid AND e.deptype = 'e')
	UNION ALL
	SELECT 'collation', n.nspname || '.' || co.collname
	FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace n ON n.oid = co.collnamespace
	WHERE co.collnamespace = ANY($1)
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_collation'::pg_catalog.regclass AND e.objid = co.oid AND e.deptype = 'e')
	UNION ALL
	SELECT 'operator', n.nspname || '.' || o.oprname
	FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
	WHERE o.oprnamespace = ANY($1)
	  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND e.objid = o.oid AND e.deptype = 'e')
) u ORDER BY 1`

// checkUnsupported returns ErrUnsupportedObject naming what Dump cannot carry.
func checkUnsupported(ctx context.Context, conn *pgx.Conn, schemaOIDs []uint32, tables []*tableDef) error {
	rows, err := conn.Query(ctx, unsupportedQuery, schemaOIDs, tableOIDs(tables))
	if err != nil {
		return fmt.Errorf("look for unsupported objects: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look for unsupported objects: %w", err)
	}
	if len(found) == 0 {
		return nil
	}
	more := ""
	if len(found) > 20 {
		more = fmt.Sprintf(" and %d more", len(found)-20)
		found = found[:20]
	}
	return fmt.Errorf("%w: the source database holds %s%s, which the dump cannot carry; leave their tables or schemas out, or remove them", ErrUnsupportedObject, strings.Join(found, ", "), more)
}
