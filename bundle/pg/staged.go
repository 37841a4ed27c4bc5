package pg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// stagePlan is how one stream is restored through staging schemas.
type stagePlan struct {
	// schemas are the header's, stage maps each to its staging schema.
	schemas []string
	stage   map[string]string
	// pre is the pre-data to run in the staging schemas (rewritten), without
	// the entries in deferred: CREATE SCHEMA and COMMENT ON SCHEMA, run as
	// they are in the final transaction.
	pre, deferred []object
	// trial is the early post-data, rewritten, in stream order.
	trial []object
	// groups holds each table's post-data (rewritten, stream order), built
	// once the table is loaded; after is what follows the first entry of no
	// single table (foreign keys), run after every group.
	groups map[qname][]object
	after  []object
	// A table is analyzed as soon as it is loaded, before its index builds
	// (ANALYZE and CREATE INDEX lock each other out), unless it has an index
	// on an expression, whose statistics ANALYZE gathers only once it
	// exists: after its group (lateAnalyze) or after the after list
	// (afterAnalyze).
	lateAnalyze, afterAnalyze map[qname]bool
}

// newStagePlan rewrites the stream's statements for staging, or says why the
// stream cannot be staged.
func newStagePlan(sr *streamReader, pre []object) (*stagePlan, error) {
	h := &sr.header
	if sr.early == nil {
		return nil, fmt.Errorf("the stream (format %s) carries no early copy of its post-data, which format 1.2 adds", h.Version)
	}
	id := sha256.New()
	fmt.Fprintf(id, "%s\x00%d\x00", h.ServerVersion, len(pre))
	for _, t := range h.Tables {
		fmt.Fprintf(id, "%s\x00%s\x00", t.Schema, t.Name)
	}
	for _, o := range pre {
		fmt.Fprintf(id, "%s\x00", o.SQL)
	}
	tag := hex.EncodeToString(id.Sum(nil))[:12]
	p := &stagePlan{schemas: h.Schemas, stage: map[string]string{}, groups: map[qname][]object{},
		lateAnalyze: map[qname]bool{}, afterAnalyze: map[qname]bool{}}
	for i, s := range h.Schemas {
		p.stage[s] = stagingPrefix + tag + "_" + strconv.Itoa(i+1)
	}
	w := &stageRewriter{to: p.stage}
	for i, o := range pre {
		if o.Kind == "EXTENSION" {
			return nil, fmt.Errorf("%w: it creates extension %s, which would have to exist before its staging schema", errNotStageable, o.Name)
		}
		toks, err := lexSQL(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("pre-data entry %d: %w", i+1, err)
		}
		if w := leadingWords(toks, 3); o.Kind == "SCHEMA" || (w[0] == "comment" && w[1] == "on" && w[2] == "schema") {
			p.deferred = append(p.deferred, o)
			continue
		}
		sql, err := w.rewrite(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("pre-data entry %d: %w", i+1, err)
		}
		o.SQL = sql
		p.pre = append(p.pre, o)
	}
	tables := map[qname]bool{}
	for _, t := range h.Tables {
		tables[qname{t.Schema, t.Name}] = true
	}
	indexTable := map[qname]qname{}
	cut := false
	for i, o := range sr.early {
		sql, err := w.rewrite(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("post-data entry %d: %w", i+1, err)
		}
		staged := o
		staged.SQL = sql
		p.trial = append(p.trial, staged)
		t, ok := postDataTable(o.SQL, indexTable)
		ok = ok && tables[t]
		if ok && (o.Kind == "INDEX" || o.Kind == "CONSTRAINT") {
			indexTable[qname{o.Schema, o.Name}] = t
		}
		expr := (o.Kind == "INDEX" || o.Kind == "CONSTRAINT") && indexedExpression(o.Kind, o.SQL)
		if !cut && ok && o.Kind != "FK CONSTRAINT" {
			p.groups[t] = append(p.groups[t], staged)
			if expr {
				p.lateAnalyze[t] = true
			}
			continue
		}
		// From the first foreign key (or entry of no single table) on,
		// everything runs after every table's group, in stream order.
		cut = true
		p.after = append(p.after, staged)
		if expr {
			if !ok {
				return nil, fmt.Errorf("%w: post-data entry %d indexes an expression of a table it does not name plainly", errNotStageable, i+1)
			}
			p.afterAnalyze[t] = true
		}
	}
	if err := p.recheck(h); err != nil {
		return nil, err
	}
	return p, nil
}

// recheck runs the statement checker again over the rewritten statements,
// as if the staging schemas were the stream's: the rewrite works on tokens,
// not on the checked tree, and what runs on the server must have passed the
// checker as it is, not only before the rewrite. A rewritten statement the checker
// refuses makes the stream unfit for staging (the one-transaction restore
// runs the statements as they were checked).
func (p *stagePlan) recheck(h *streamHeader) error {
	sh := &streamHeader{Format: h.Format, Version: h.Version, Schemas: p.stageSchemas()}
	for _, t := range h.Tables {
		sh.Tables = append(sh.Tables, streamTable{Schema: p.stage[t.Schema], Name: t.Name, Columns: t.Columns, NoData: t.NoData})
	}
	c, err := newDDLChecker(sh)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotStageable, err)
	}
	staged := func(objs []object) []object {
		out := make([]object, len(objs))
		for i, o := range objs {
			if s, ok := p.stage[o.Schema]; ok {
				o.Schema = s
			}
			out[i] = o
		}
		return out
	}
	if err := c.checkList(memberPreData, staged(p.pre)); err != nil {
		return fmt.Errorf("%w: the rewritten pre-data does not pass the statement check: %v", errNotStageable, err)
	}
	if err := c.checkList(memberPostData, staged(p.trial)); err != nil {
		return fmt.Errorf("%w: the rewritten post-data does not pass the statement check: %v", errNotStageable, err)
	}
	return nil
}

func (p *stagePlan) stagedName(schema, name string) string { return qualified(p.stage[schema], name) }

func (p *stagePlan) stageSchemas() []string {
	out := make([]string, len(p.schemas))
	for i, s := range p.schemas {
		out[i] = p.stage[s]
	}
	return out
}

// stageRun is one staged restore in progress.
type stageRun struct {
	rs *restorer
	p  *stagePlan
	// ctx is cancelled at the first failure anywhere.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	err      error
	analyzed bool

	// tasks go to the workers; chains (a table's ANALYZE and keys, the end
	// of its group) before single index builds, so that what must run one
	// after the other starts first.
	tasks, chains chan func(context.Context, *pgx.Conn) error
	workers       sync.WaitGroup
	groups        sync.WaitGroup
	// readback[i] is table i as re-read from the target (when reading back).
	readback []*tableHash
	// loading is true until the last table is loaded, and busy counts the
	// worker tasks running or queued. An index build uses the server's
	// parallel workers only when it is all there is to do: while anything
	// else runs, every core is taken already and a parallel build only adds
	// the cost of its workers' merge (measured: about 1 s more CPU, and
	// slower, on the bench's 2-core restore).
	loading atomic.Bool
	busy    atomic.Int32
	// maintenanceWorkers is the server's max_parallel_maintenance_workers.
	maintenanceWorkers string
	// feeder carries the rows from the stream to the loaders.
	feeder *feeder
}

// fail keeps the first error and stops everything.
func (s *stageRun) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	f := s.feeder
	s.mu.Unlock()
	s.cancel()
	if f != nil {
		f.abort()
	}
}

func (s *stageRun) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

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

// loadStaged runs steps 3 to 5 on committed staging schemas.
func (rs *restorer) loadStaged(parent context.Context, p *stagePlan) (*Summary, error) {
	tables := rs.sr.header.Tables
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s := &stageRun{rs: rs, p: p, ctx: ctx, cancel: cancel, readback: make([]*tableHash, len(tables)), feeder: newFeeder(rs.opts.SpoolDir),
		tasks:  make(chan func(context.Context, *pgx.Conn) error, 2*len(tables)+len(p.trial)+1),
		chains: make(chan func(context.Context, *pgx.Conn) error, 2*len(tables)+1), analyzed: !rs.opts.SkipAnalyze}
	if err := rs.stagedSession(ctx, rs.conn); err != nil {
		return nil, err
	}
	if err := rs.conn.QueryRow(ctx, "SELECT pg_catalog.current_setting('max_parallel_maintenance_workers')").Scan(&s.maintenanceWorkers); err != nil {
		return nil, fmt.Errorf("restore: read settings: %w", err)
	}
	s.loading.Store(true)
	n := rs.opts.Workers
	if n <= 0 {
		n = defaultWorkers
	}
	nl := rs.opts.Loaders
	if nl <= 0 {
		nl = defaultLoaders
	}
	conns := make([]*pgx.Conn, 0, n+nl-1)
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	}()
	for i := 0; i < n+nl-1; i++ {
		c, err := connect(ctx, rs.connString, "target")
		if err == nil {
			err = rs.stagedSession(ctx, c)
		}
		if err != nil {
			if c != nil {
				_ = c.Close(context.Background())
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	// The first connection (rs.conn) and nl-1 more load; the rest work.
	loaders := append([]*pgx.Conn{rs.conn}, conns[n:]...)
	workerConns := conns[:n]
	work := func(c *pgx.Conn) {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			tasks, chains := s.tasks, s.chains
			for tasks != nil || chains != nil {
				var task func(context.Context, *pgx.Conn) error
				var ok bool
				select {
				case task, ok = <-chains:
					if !ok {
						chains = nil
						continue
					}
				default:
					select {
					case task, ok = <-chains:
						if !ok {
							chains = nil
							continue
						}
					case task, ok = <-tasks:
						if !ok {
							tasks = nil
							continue
						}
					}
				}
				err := task(ctx, c)
				s.busy.Add(-1)
				if err != nil {
					s.fail(err)
				}
			}
		}()
	}
	for _, c := range workerConns {
		work(c)
	}
	closed := false
	// stop waits for the queued work (cancelled first when aborting) and
	// ends the workers; a group task queues its ANALYZE before it is done.
	stop := func(abort bool) {
		if closed {
			return
		}
		closed = true
		if abort {
			cancel()
		}
		s.groups.Wait()
		close(s.tasks)
		close(s.chains)
		s.workers.Wait()
	}
	defer stop(true)
	failure := func(err error) error {
		// A worker's error is the cause; the loader then only saw the
		// cancellation.
		if first := s.failed(); first != nil {
			return first
		}
		return err
	}

	// The loaders take the tables in stream order, each table in a
	// transaction of its own that truncates it first so that COPY may
	// FREEZE; this goroutine reads the stream into their feeds.
	fdr := s.feeder
	defer fdr.close()
	jobs := make(chan loadJob, len(tables))
	var loading sync.WaitGroup
	jobsClosed := false
	endLoads := func() {
		if !jobsClosed {
			jobsClosed = true
			close(jobs)
		}
		loading.Wait()
	}
	defer func() {
		fdr.abort() // a no-op once the loads are over
		endLoads()
	}()
	for _, c := range loaders {
		loading.Add(1)
		go func(c *pgx.Conn) {
			defer loading.Done()
			for {
				fdr.loaderIdle()
				job, ok := <-jobs
				fdr.loaderBusy()
				if !ok {
					return
				}
				if err := s.load(ctx, c, job); err != nil {
					s.fail(err)
				}
			}
		}(c)
	}
	hashes := make([]*tableHash, len(tables))
	buf := make([]byte, feedChunk)
	for i, t := range tables {
		fd := fdr.newFeed()
		jobs <- loadJob{i: i, t: t, fd: fd}
		h, err := rs.readTable(i, t, fd, buf)
		if err != nil {
			s.fail(err)
			fd.finish(0, err)
			return nil, failure(err)
		}
		hashes[i] = h
	}
	summary, err := rs.sr.finish(hashes)
	if err != nil {
		s.fail(err)
		return nil, failure(err)
	}
	endLoads()
	if err := s.failed(); err != nil {
		return nil, err
	}
	rs.log.Debug("staged every table", "loaders", len(loaders), "spilled", fdr.spilled)
	if fdr.spoolErr != nil {
		rs.log.Warn("the restore stopped reading ahead: its spool file could not grow (RestoreOptions.SpoolDir)", "error", fdr.spoolErr)
	}
	s.loading.Store(false)
	// The other loaders' connections build indexes now (rs.conn stays for
	// the foreign keys and the final transaction).
	for _, c := range loaders[1:] {
		work(c)
	}
	rs.progress(ProgressEvent{Phase: PhasePostData, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	s.groups.Wait()
	if err := s.failed(); err != nil {
		return nil, err
	}
	if len(p.after) > 0 {
		if err := s.runGroup(ctx, rs.conn, p.after); err != nil {
			return nil, failure(err)
		}
		for _, t := range tables {
			if p.afterAnalyze[qname{t.Schema, t.Name}] && !rs.opts.SkipAnalyze {
				if _, err := rs.conn.Exec(ctx, "ANALYZE "+p.stagedName(t.Schema, t.Name)); err != nil {
					return nil, failure(fmt.Errorf("analyze %s.%s: %w", t.Schema, t.Name, err))
				}
			}
		}
	}
	rs.progress(ProgressEvent{Phase: PhaseAnalyze, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	stop(false)
	if err := s.failed(); err != nil {
		return nil, err
	}
	if rs.readback {
		for i, t := range summary.Tables {
			if got := s.readback[i]; got == nil || got.sum() != t.Checksum || got.rows != t.Rows {
				rows, sum := int64(0), "nothing"
				if got != nil {
					rows, sum = got.rows, got.sum()
				}
				return nil, fmt.Errorf("%w: table %s.%s as loaded reads back as %d rows hashing to %s; the dump recorded %d rows hashing to %s",
					ErrChecksumMismatch, t.Schema, t.Name, rows, sum, t.Rows, t.Checksum)
			}
		}
	}
	rs.progress(ProgressEvent{Phase: PhaseCommit, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	if err := rs.finalTransaction(parent, p); err != nil {
		return nil, err
	}
	rs.log.Info("restore committed", "tables", len(summary.Tables), "bytes", summary.Bytes, "workers", n)
	summary.Analyzed = s.analyzed && len(tables) > 0
	rs.progress(ProgressEvent{Phase: PhaseDone, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	return summary, nil
}

// loadJob is one table for a loader.
type loadJob struct {
	i  int
	t  streamTable
	fd *feed
}

// readTable reads table i's data from the stream into its feed, hashing and
// counting it as the dump did.
func (rs *restorer) readTable(i int, t streamTable, fd *feed, buf []byte) (*tableHash, error) {
	name := t.Schema + "." + t.Name
	ev := ProgressEvent{Phase: PhaseData, Table: name, TablesDone: i, TablesTotal: len(rs.sr.header.Tables), Bytes: rs.bytes}
	rs.progress(ev)
	h := t.newHash()
	src := rs.sr.tableData(i + 1)
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			_, _ = h.Write(buf[:n])
			if perr := fd.push(buf[:n]); perr != nil {
				return nil, perr
			}
			ev.TableBytes += int64(n)
			ev.Bytes += int64(n)
			rs.bytes += int64(n)
			if ev.TableBytes%(4<<20) < int64(n) {
				rs.progress(ev)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("restore table %s: %w", name, err)
		}
	}
	if t.NoData && h.bytes > 0 {
		return nil, corrupt("table %s is marked without data but has data members", name)
	}
	fd.finish(h.rows, nil)
	return h, nil
}

// load copies one table from its feed into its staging table on c, in a
// transaction that truncates it first, so that COPY may FREEZE, then hands
// it to the workers.
func (s *stageRun) load(ctx context.Context, c *pgx.Conn, job loadJob) error {
	t := job.t
	name := t.Schema + "." + t.Name
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("restore table %s: %w", name, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	target := s.p.stagedName(t.Schema, t.Name)
	if _, err := tx.Exec(ctx, "TRUNCATE TABLE "+target); err != nil {
		return fmt.Errorf("restore table %s: %w", name, err)
	}
	start := time.Now()
	tag, err := c.PgConn().CopyFrom(ctx, job.fd.reader(ctx), t.copyFromSQL(target))
	if err != nil {
		return fmt.Errorf("restore table %s: %w", name, err)
	}
	if rows := job.fd.rows; tag.RowsAffected() != rows {
		return fmt.Errorf("%w: table %s: the server loaded %d rows, the stream holds %d", ErrChecksumMismatch, name, tag.RowsAffected(), rows)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("restore table %s: %w", name, err)
	}
	s.rs.log.Debug("staged table", "table", name, "rows", job.fd.rows, "seconds", time.Since(start).Seconds())
	s.tableLoaded(job.i, t)
	return nil
}

// tableLoaded hands a loaded table to the workers: ANALYZE, its keys and
// exclusion constraints (one after the other: each locks the table), its
// other indexes (at once, on as many workers as are free), the rest of its
// group (CLUSTER ON, replica identity, comments); and the readback.
func (s *stageRun) tableLoaded(i int, t streamTable) {
	p, rs := s.p, s.rs
	target := p.stagedName(t.Schema, t.Name)
	name := t.Schema + "." + t.Name
	q := qname{t.Schema, t.Name}
	var keys, indexes, rest []object
	for _, o := range p.groups[q] {
		switch o.Kind {
		case "CONSTRAINT":
			keys = append(keys, o)
		case "INDEX":
			indexes = append(indexes, o)
		default:
			rest = append(rest, o)
		}
	}
	analyze := func(ctx context.Context, c *pgx.Conn) error {
		start := time.Now()
		if _, err := c.Exec(ctx, "ANALYZE "+target); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rs.log.Warn("analyze failed; autovacuum will gather statistics later", "table", name, "error", err)
			s.mu.Lock()
			s.analyzed = false
			s.mu.Unlock()
			return nil
		}
		rs.log.Debug("staged analyze", "table", name, "seconds", time.Since(start).Seconds())
		return nil
	}
	analyzeFirst := !rs.opts.SkipAnalyze && !p.lateAnalyze[q] && !p.afterAnalyze[q]
	analyzeLast := !rs.opts.SkipAnalyze && p.lateAnalyze[q] && !p.afterAnalyze[q]
	timed := func(ctx context.Context, c *pgx.Conn, objs []object) error {
		start := time.Now()
		if err := s.runGroup(ctx, c, objs); err != nil {
			return err
		}
		for _, o := range objs {
			rs.log.Debug("staged post-data", "table", name, "kind", o.Kind, "name", o.Name, "statements", len(objs), "seconds", time.Since(start).Seconds())
			break
		}
		return nil
	}
	s.groups.Add(1)
	last := func(ctx context.Context, c *pgx.Conn) error {
		defer s.groups.Done()
		if err := timed(ctx, c, rest); err != nil {
			return err
		}
		if analyzeLast {
			return analyze(ctx, c)
		}
		return nil
	}
	s.queue(s.chains, func(ctx context.Context, c *pgx.Conn) error {
		if analyzeFirst {
			if err := analyze(ctx, c); err != nil {
				s.groups.Done()
				return err
			}
		}
		if err := timed(ctx, c, keys); err != nil {
			s.groups.Done()
			return err
		}
		if len(indexes) == 0 {
			return last(ctx, c)
		}
		var left atomic.Int32
		var failed atomic.Bool
		left.Store(int32(len(indexes)))
		for _, o := range indexes {
			s.queue(s.tasks, func(ctx context.Context, c *pgx.Conn) error {
				err := timed(ctx, c, []object{o})
				if err != nil {
					failed.Store(true)
				}
				if left.Add(-1) == 0 {
					if failed.Load() {
						s.groups.Done()
					} else {
						s.queue(s.chains, last)
					}
				}
				return err
			})
		}
		return nil
	})
	if rs.readback {
		s.queue(s.tasks, func(ctx context.Context, c *pgx.Conn) error {
			h := t.newHash()
			if _, err := c.PgConn().CopyTo(ctx, h, t.copyToSQL(target)); err != nil {
				return fmt.Errorf("verify table %s: %w", name, err)
			}
			s.mu.Lock()
			s.readback[i] = h
			s.mu.Unlock()
			return nil
		})
	}
}

// queue hands a task to the workers, counting it as busy until it ends.
func (s *stageRun) queue(to chan func(context.Context, *pgx.Conn) error, task func(context.Context, *pgx.Conn) error) {
	s.busy.Add(1)
	to <- task
}

// runGroup runs post-data statements in one transaction on c.
func (s *stageRun) runGroup(ctx context.Context, c *pgx.Conn, objs []object) error {
	if len(objs) == 0 {
		return nil
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("restore post-data: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	parallel := "" // the session's, until set
	for _, o := range objs {
		if want := s.parallelWorkers(); want != parallel && (o.Kind == "INDEX" || o.Kind == "CONSTRAINT") {
			if _, err := tx.Exec(ctx, "SELECT pg_catalog.set_config('max_parallel_maintenance_workers', $1, true)", want); err != nil {
				return fmt.Errorf("restore post-data: %w", err)
			}
			parallel = want
		}
		if _, err := tx.Exec(ctx, o.SQL); err != nil {
			return s.rs.schemaErr(ctx, fmt.Errorf("restore %s %s.%s: %w", strings.ToLower(o.Kind), o.Schema, o.Name, err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("restore post-data: %w", err)
	}
	return nil
}

// parallelWorkers is the max_parallel_maintenance_workers of an index build
// starting now: the server's only when the build is the one task left.
func (s *stageRun) parallelWorkers() string {
	if s.loading.Load() || s.busy.Load() > 1 {
		return "0"
	}
	return s.maintenanceWorkers
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
