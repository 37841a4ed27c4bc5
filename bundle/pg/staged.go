package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The staged restore (see Restore):
//
//  1. Under a session advisory lock (one staged restore per database at a
//     time), refuse a non-empty target unless Replace, and drop every staging
//     schema of ours that a killed restore left (T0).
//  2. In one transaction (T1): create the staging schemas, run the pre-data
//     rewritten to name them, try the post-data on the empty tables, check on
//     the server that nothing was created in, or made to depend on, the real
//     schemas, roll the post-data back, commit. Any failure here, before a
//     row is read, falls back to the one-transaction restore.
//  3. Load each table on the first connection (TRUNCATE, COPY FREEZE, commit);
//     meanwhile, on the worker connections, build each loaded table's keys
//     and indexes, re-read it when reading back, and ANALYZE it.
//  4. At the end of the stream: the checksums against the summary, the
//     foreign keys (and whatever post-data follows them), the readbacks.
//  5. The final transaction: drop the old objects (Replace) or check the
//     target is still empty, create missing schemas, move every table,
//     sequence and type from the staging schemas into the real ones (ALTER
//     ... SET SCHEMA: indexes, constraints, owned sequences and statistics go
//     with their table), set the sequences, drop the empty staging schemas,
//     BeforeCommit, COMMIT.
//
// Nobody reading the real schemas sees anything before that commit, and
// with Replace the old objects are there, unlocked, until the final
// transaction drops them. A failure after T1 drops the staging schemas; a
// kill leaves them to the next restore, which drops them in step 1.

// errStageFallback marks a refusal of staging before any row was loaded: the
// restore goes on in one transaction.
var errStageFallback = errors.New("staged restore not possible")

// stagingLockKey is the advisory lock a staged restore holds on its target
// database ("kat_stag").
const stagingLockKey int64 = 0x6b61745f73746167

// defaultWorkers and defaultLoaders are how many connections a staged
// restore builds indexes on, and loads rows on, by default.
const (
	defaultWorkers = 2
	defaultLoaders = 2
)

// staged restores the stream through staging schemas; an error wrapping
// errStageFallback means nothing was loaded and the one-transaction restore
// should run instead.
func (rs *restorer) staged(ctx context.Context, p *stagePlan) (*Summary, error) {
	tables := rs.sr.header.Tables
	rs.progress(ProgressEvent{Phase: PhaseSchema, TablesTotal: len(tables)})
	conn := rs.conn
	if err := rs.stagingLock(ctx); err != nil {
		return nil, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !conn.IsClosed() {
			_, _ = conn.Exec(uctx, "SELECT pg_catalog.pg_advisory_unlock($1)", stagingLockKey)
		}
	}()
	if err := rs.clearStaging(ctx); err != nil {
		return nil, err
	}
	if err := rs.createStaging(ctx, p); err != nil {
		if ctx.Err() != nil || conn.IsClosed() {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errStageFallback, err)
	}
	sum, err := rs.loadStaged(ctx, p)
	if err != nil {
		rs.dropStaging(p)
		return nil, err
	}
	return sum, nil
}

// stagingLock takes the session advisory lock of staged restores on the
// target, waiting for a restore that holds it (a killed restore's backends
// end once they notice their client is gone).
func (rs *restorer) stagingLock(ctx context.Context) error {
	var ok bool
	if err := rs.conn.QueryRow(ctx, "SELECT pg_catalog.pg_try_advisory_lock($1)", stagingLockKey).Scan(&ok); err != nil {
		return fmt.Errorf("restore: take the staging lock: %w", err)
	}
	if ok {
		return nil
	}
	rs.log.Info("another restore into this database holds the staging lock (or a killed one's session is still ending); waiting for it")
	if _, err := rs.conn.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock($1)", stagingLockKey); err != nil {
		return fmt.Errorf("restore: wait for the staging lock: %w", err)
	}
	return nil
}

// stagingSchemasQuery lists our staging schemas.
const stagingSchemasQuery = `SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE ` + stagingCond + ` ORDER BY 1`

// clearStaging (T0) refuses a non-empty target unless Replace, then drops
// the staging schemas a killed restore left.
func (rs *restorer) clearStaging(ctx context.Context) error {
	tx, err := rs.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := prepareTarget(ctx, tx, false); err != nil && !(rs.opts.Replace && errors.Is(err, ErrTargetNotEmpty)) {
		return err
	}
	rows, err := tx.Query(ctx, stagingSchemasQuery)
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	if len(left) > 0 {
		rows, err := tx.Query(ctx, outsideDependentsQuery, left)
		if err != nil {
			return fmt.Errorf("inspect target database: %w", err)
		}
		deps, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("inspect target database: %w", err)
		}
		if len(deps) > 0 {
			return fmt.Errorf("the staging schema(s) %s that an earlier restore left are used by objects outside them (%s): drop those, or the schemas, yourself",
				strings.Join(left, ", "), strings.Join(deps, "; "))
		}
	}
	for _, s := range left {
		rs.log.Info("dropping the staging schema an earlier restore left", "schema", s)
		if _, err := tx.Exec(ctx, "DROP SCHEMA "+ident(s)+" CASCADE"); err != nil {
			return fmt.Errorf("drop leftover staging schema %s: %w", s, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("drop leftover staging schemas: %w", err)
	}
	return nil
}

// objectNamespace is the schema of the object (classid, objid) of pg_depend
// row d, for the catalogs a restore's objects and their users live in.
func objectNamespace(classid, objid string) string {
	return `CASE ` + classid + `
			WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = ` + objid + `)
			WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = ` + objid + `)
			WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT connamespace FROM pg_catalog.pg_constraint WHERE oid = ` + objid + `)
			WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid = ` + objid + `)
			WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN (SELECT c.relnamespace FROM pg_catalog.pg_attrdef a
				JOIN pg_catalog.pg_class c ON c.oid = a.adrelid WHERE a.oid = ` + objid + `)
			WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN (SELECT c.relnamespace FROM pg_catalog.pg_rewrite r
				JOIN pg_catalog.pg_class c ON c.oid = r.ev_class WHERE r.oid = ` + objid + `)
			WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN (SELECT c.relnamespace FROM pg_catalog.pg_trigger g
				JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid WHERE g.oid = ` + objid + `)
			WHEN 'pg_catalog.pg_namespace'::pg_catalog.regclass THEN ` + objid + `
		END`
}

// outsideDependentsQuery lists objects outside the staging schemas $1 that
// normally depend on objects in them (a user's view or foreign key on a
// leftover staging table): DROP SCHEMA ... CASCADE would take them along.
var outsideDependentsQuery = `
WITH stg AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY($1)),
d AS (
	SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) AS dependent,
		` + objectNamespace("d.classid", "d.objid") + ` AS fromns,
		` + objectNamespace("d.refclassid", "d.refobjid") + ` AS tons
	FROM pg_catalog.pg_depend d WHERE d.deptype = 'n' AND d.objid >= 16384)
SELECT dependent FROM d
WHERE tons IN (SELECT oid FROM stg) AND (fromns IS NULL OR fromns NOT IN (SELECT oid FROM stg))
ORDER BY 1 LIMIT 5`

// targetObjectsCountQuery counts the relations, types, constraints and
// routines in the schemas $1 (the stream's schemas, as they are in the
// target).
const targetObjectsCountQuery = `
WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY($1))
SELECT (SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace IN (SELECT oid FROM ns))
	+ (SELECT count(*) FROM pg_catalog.pg_type WHERE typnamespace IN (SELECT oid FROM ns))
	+ (SELECT count(*) FROM pg_catalog.pg_constraint WHERE connamespace IN (SELECT oid FROM ns))
	+ (SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace IN (SELECT oid FROM ns))`

// crossDependencyQuery lists dependencies of objects in the staging schemas
// ($1) on objects in, or on, the real schemas ($2): a staged statement that
// still named a real object.
const crossDependencyQuery = `
WITH stg AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY($1)),
tgt AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY($2)),
d AS (
	SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) AS dependent,
		pg_catalog.pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) AS referenced,
		CASE d.classid
			WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = d.objid)
			WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = d.objid)
			WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT connamespace FROM pg_catalog.pg_constraint WHERE oid = d.objid)
			WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN (SELECT c.relnamespace FROM pg_catalog.pg_attrdef a
				JOIN pg_catalog.pg_class c ON c.oid = a.adrelid WHERE a.oid = d.objid)
		END AS fromns,
		CASE d.refclassid
			WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = d.refobjid)
			WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid = d.refobjid)
			WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT connamespace FROM pg_catalog.pg_constraint WHERE oid = d.refobjid)
			WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid = d.refobjid)
			WHEN 'pg_catalog.pg_namespace'::pg_catalog.regclass THEN d.refobjid
		END AS tons
	FROM pg_catalog.pg_depend d WHERE d.objid >= 16384)
SELECT dependent || ' -> ' || referenced FROM d
WHERE fromns IN (SELECT oid FROM stg) AND tons IN (SELECT oid FROM tgt)
ORDER BY 1 LIMIT 5`

// ownedElsewhereQuery lists the sequences of the staging schemas $1 owned by
// a table of another schema.
const ownedElsewhereQuery = `
SELECT s.relname::text FROM pg_catalog.pg_class s
JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = s.oid
	AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
WHERE s.relkind = 'S' AND t.relnamespace <> s.relnamespace
  AND s.relnamespace IN (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY($1))
ORDER BY 1`

// createStaging (T1) creates the staging schemas and the stream's objects in
// them, tries the post-data on the empty tables and checks the result.
func (rs *restorer) createStaging(ctx context.Context, p *stagePlan) error {
	tx, err := rs.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return fmt.Errorf("create the staging schemas: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	var before int64
	if err := tx.QueryRow(ctx, targetObjectsCountQuery, p.schemas).Scan(&before); err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	for _, s := range p.stageSchemas() {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+ident(s)); err != nil {
			return fmt.Errorf("create staging schema %s: %w", s, err)
		}
		comment := stagingComment + ": the tables of a restore in progress, moved into their schemas when it commits; a restore drops what a killed one left"
		if _, err := tx.Exec(ctx, "COMMENT ON SCHEMA "+ident(s)+" IS "+literal(comment)); err != nil {
			return fmt.Errorf("create staging schema %s: %w", s, err)
		}
	}
	exec := func(objs []object) error {
		for _, o := range objs {
			if _, err := tx.Exec(ctx, o.SQL); err != nil {
				return fmt.Errorf("staged %s %s.%s: %w", strings.ToLower(o.Kind), o.Schema, o.Name, err)
			}
		}
		return nil
	}
	if err := exec(p.pre); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT kat_trial"); err != nil {
		return err
	}
	if err := exec(p.trial); err != nil {
		return err
	}
	var after int64
	if err := tx.QueryRow(ctx, targetObjectsCountQuery, p.schemas).Scan(&after); err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	if after != before {
		return fmt.Errorf("the staged statements created %d object(s) in the real schemas", after-before)
	}
	rows, err := tx.Query(ctx, crossDependencyQuery, p.stageSchemas(), p.schemas)
	if err != nil {
		return fmt.Errorf("inspect staging schemas: %w", err)
	}
	deps, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("inspect staging schemas: %w", err)
	}
	if len(deps) > 0 {
		return fmt.Errorf("staged objects depend on objects of the real schemas: %s", strings.Join(deps, "; "))
	}
	// ALTER TABLE SET SCHEMA takes a table's sequences into the table's
	// schema: a sequence owned by a table of another schema would move.
	var strays []string
	rows, err = tx.Query(ctx, ownedElsewhereQuery, p.stageSchemas())
	if err == nil {
		strays, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return fmt.Errorf("inspect staging schemas: %w", err)
	}
	if len(strays) > 0 {
		return fmt.Errorf("sequence(s) %s belong to a table of another schema", strings.Join(strays, ", "))
	}
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT kat_trial"); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("create the staging schemas: %w", err)
	}
	return nil
}

// dropStaging drops this restore's staging schemas after a failure, on a
// connection of its own (the restore's may be gone); a kill or a failure here
// leaves them to the next restore.
func (rs *restorer) dropStaging(p *stagePlan) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx, rs.connString, "target")
	if err != nil {
		rs.log.Warn("the staging schemas stay until the next restore drops them", "error", err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var drop []string
	for _, s := range p.stageSchemas() {
		drop = append(drop, ident(s))
	}
	rows, err := conn.Query(ctx, outsideDependentsQuery, p.stageSchemas())
	var deps []string
	if err == nil {
		deps, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	switch {
	case err != nil:
		rs.log.Warn("the staging schemas stay until the next restore drops them", "error", err)
	case len(deps) > 0:
		rs.log.Warn("the staging schemas stay: objects outside them use them", "objects", strings.Join(deps, "; "))
	default:
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+strings.Join(drop, ", ")+" CASCADE"); err != nil {
			rs.log.Warn("the staging schemas stay until the next restore drops them", "error", err)
		}
	}
}

// stagedSession prepares a connection of the staged restore: its commits do
// not wait for the WAL flush (the final commit, which waits, makes them
// durable with it), index builds get their memory, and (PostgreSQL 14 on) a
// backend whose client died ends soon, even in a long statement.
func (rs *restorer) stagedSession(ctx context.Context, c *pgx.Conn) error {
	mem := rs.opts.MaintenanceWorkMem
	if mem == "" {
		mem = "256MB"
	}
	if _, err := c.Exec(ctx, "SELECT pg_catalog.set_config('synchronous_commit', 'off', false), pg_catalog.set_config('maintenance_work_mem', $1, false)", mem); err != nil {
		return fmt.Errorf("restore: session settings: %w", err)
	}
	if rs.targetVersionNum >= 140000 {
		if _, err := c.Exec(ctx, "SELECT pg_catalog.set_config('client_connection_check_interval', '2s', false)"); err != nil {
			return fmt.Errorf("restore: session settings: %w", err)
		}
	}
	return rs.session(ctx, c)
}

// movableQueries list, in the order they are moved, what is in staging
// schema $1: tables (their indexes, constraints, owned sequences, row types
// and statistics go with them), the other sequences, the types and domains,
// multirange types, then functions (the constructors of range types, which
// stay behind their type). Each runs after the moves before it.
var movableQueries = []struct{ kind, query string }{
	{"TABLE", `SELECT pg_catalog.quote_ident(c.relname) FROM pg_catalog.pg_class c
		WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND c.relkind IN ('r', 'p') ORDER BY 1`},
	{"SEQUENCE", `SELECT pg_catalog.quote_ident(c.relname) FROM pg_catalog.pg_class c
		WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND c.relkind = 'S' ORDER BY 1`},
	{"TYPE", `SELECT CASE t.typtype WHEN 'd' THEN 'DOMAIN ' ELSE 'TYPE ' END || pg_catalog.quote_ident(t.typname) FROM pg_catalog.pg_type t
		WHERE t.typnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1)
		  AND t.typtype IN ('e', 'r', 'd', 'c') AND t.typcategory <> 'A'
		  AND (t.typtype <> 'c' OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c') ORDER BY 1`},
	{"TYPE", `SELECT pg_catalog.quote_ident(t.typname) FROM pg_catalog.pg_type t
		WHERE t.typnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND t.typtype = 'm' ORDER BY 1`},
	{"ROUTINE", `SELECT pg_catalog.quote_ident(p.proname) || pg_catalog.substr(p.oid::pg_catalog.regprocedure::text,
			pg_catalog.strpos(p.oid::pg_catalog.regprocedure::text, '('))
		FROM pg_catalog.pg_proc p WHERE p.pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) ORDER BY 1`},
}

// finalTransaction makes the staged objects the target's, in one
// transaction that runs BeforeCommit before it commits.
func (rs *restorer) finalTransaction(ctx context.Context, p *stagePlan) error {
	conn := rs.conn
	// This commit makes the restore durable, and the staged commits with it.
	if _, err := conn.Exec(ctx, "RESET synchronous_commit"); err != nil {
		return fmt.Errorf("restore: session settings: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("start the final restore transaction: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	rs.tx = tx
	if err := prepareTarget(ctx, tx, rs.opts.Replace); err != nil {
		return err
	}
	var comments []object
	for _, o := range p.deferred {
		if o.Kind != "SCHEMA" {
			comments = append(comments, o)
			continue
		}
		if err := rs.execAll(ctx, []object{o}); err != nil {
			return err
		}
	}
	for _, schema := range p.schemas {
		stage := p.stage[schema]
		for _, mq := range movableQueries {
			rows, err := tx.Query(ctx, mq.query, stage)
			if err != nil {
				return fmt.Errorf("restore: list the staged objects: %w", err)
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("restore: list the staged objects: %w", err)
			}
			for _, name := range names {
				kind := mq.kind
				if kind == "TYPE" && (strings.HasPrefix(name, "TYPE ") || strings.HasPrefix(name, "DOMAIN ")) {
					kind, name, _ = strings.Cut(name, " ")
				}
				if _, err := tx.Exec(ctx, "ALTER "+kind+" "+ident(stage)+"."+name+" SET SCHEMA "+ident(schema)); err != nil {
					return fmt.Errorf("restore: move %s %s into schema %s: %w", strings.ToLower(kind), name, schema, err)
				}
			}
		}
		// Empty now: RESTRICT fails (and rolls everything back) if not.
		if _, err := tx.Exec(ctx, "SAVEPOINT kat_drop"); err != nil {
			return fmt.Errorf("restore: drop staging schema %s: %w", stage, err)
		}
		if _, err := tx.Exec(ctx, "DROP SCHEMA "+ident(stage)); err != nil {
			var left []string
			if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT kat_drop"); rerr == nil {
				if rows, qerr := tx.Query(ctx, `SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_catalog.pg_depend d
					WHERE d.refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
					  AND d.refobjid = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) ORDER BY 1 LIMIT 10`, stage); qerr == nil {
					left, _ = pgx.CollectRows(rows, pgx.RowTo[string])
				}
			}
			return fmt.Errorf("restore: drop staging schema %s (still holding %s): %w", stage, strings.Join(left, ", "), err)
		}
	}
	if err := rs.execAll(ctx, comments); err != nil {
		return err
	}
	var setval []object
	for _, o := range rs.sr.post {
		if o.Kind == "SEQUENCE SET" {
			setval = append(setval, o)
		}
	}
	if err := rs.execAll(ctx, setval); err != nil {
		return rs.schemaErr(ctx, err)
	}
	if rs.opts.BeforeCommit != nil {
		if err := rs.opts.BeforeCommit(ctx, tx); err != nil {
			return fmt.Errorf("restore: before commit: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit restore: %w", err)
	}
	return nil
}
