package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Restore reads a dump stream from r into the database at connString, all or
// nothing: it refuses a non-empty target (*TargetNotEmptyError) unless
// opts.Replace, creates the schema, loads every table with COPY FROM (FREEZE),
// checks each table's streamed bytes and the server's row count against the
// dump's checksum and count (and re-reads the loaded table to compare, see
// Readback), creates constraints and indexes, sets sequences, runs
// opts.BeforeCommit, and commits. Any failure before the commit (bad stream,
// checksum mismatch, lost connection, cancelled ctx) leaves the target as it
// was.
//
// A stream of format 1.2 or later is restored in stages (staged.go): the
// tables are created in private staging schemas and loaded there, each
// table's keys and indexes are built on other connections while the next
// tables load, statistics are gathered there, and one short final
// transaction moves everything into the real schemas (dropping the old
// objects with Replace), runs BeforeCommit and commits. No one sees anything
// of the restore before that commit. A restore killed before it leaves only
// its staging schemas, which no check counts and the next restore drops.
// Older streams, streams that cannot be staged (extensions, names the
// rewrite cannot be sure of) and opts.SingleTransaction restore in one
// transaction on one connection, then run ANALYZE.
//
// The stream's header and pre-data are read before connecting, so a stream
// that is not a dump fails without touching the target. Reads from r are not
// interrupted by ctx; a reader that may block should honour ctx itself.
func Restore(ctx context.Context, connString string, r io.Reader, opts RestoreOptions) (*Summary, error) {
	log := logger(opts.Logger)
	sr := newStreamReader(r)
	if err := sr.readHeader(); err != nil {
		return nil, err
	}
	pre, err := sr.readPreData()
	if err != nil {
		return nil, err
	}

	conn, err := connect(ctx, connString, "target")
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	targetVersionStr, targetVersion, err := serverVersion(ctx, conn)
	if err != nil {
		return nil, err
	}
	readback := opts.Readback == ReadbackAlways ||
		(opts.Readback == ReadbackAuto && targetVersion/10000 != sr.header.ServerVersionNum/10000)
	log.Debug("restore", "sourceVersion", sr.header.ServerVersionNum, "targetVersion", targetVersion, "readback", readback)

	rs := &restorer{conn: conn, connString: connString, sr: sr, opts: opts, log: log, readback: readback,
		targetVersion: targetVersionStr, targetVersionNum: targetVersion}
	if err := rs.chooseToastCompression(ctx); err != nil {
		return nil, err
	}
	if !opts.SingleTransaction {
		plan, err := newStagePlan(sr, pre)
		switch {
		case err != nil:
			log.Info("restoring in one transaction: the stream cannot be staged", "reason", err)
		default:
			sum, err := rs.staged(ctx, plan)
			if !errors.Is(err, errStageFallback) {
				return sum, err
			}
			log.Warn("restoring in one transaction: staging was refused before any row was loaded", "reason", err)
		}
	}
	return rs.oneTransaction(ctx, pre)
}

// chooseToastCompression picks the sessions' default_toast_compression
// (RestoreOptions.ToastCompression).
func (rs *restorer) chooseToastCompression(ctx context.Context) error {
	switch c := rs.opts.ToastCompression; c {
	case "default":
		return nil
	case "lz4", "pglz":
		rs.toast = c
		return nil
	case "":
	default:
		return fmt.Errorf("restore: TOAST compression %q: use lz4, pglz, default or nothing", c)
	}
	if rs.targetVersionNum < 140000 {
		return nil
	}
	var source string
	var lz4 bool
	err := rs.conn.QueryRow(ctx, `SELECT source, 'lz4' = ANY(enumvals) FROM pg_catalog.pg_settings WHERE name = 'default_toast_compression'`).Scan(&source, &lz4)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("restore: read settings: %w", err)
	}
	if lz4 && source == "default" {
		rs.toast = "lz4"
	}
	return nil
}

// session applies the restore's settings to one of its connections.
func (rs *restorer) session(ctx context.Context, c *pgx.Conn) error {
	if rs.toast == "" {
		return nil
	}
	if _, err := c.Exec(ctx, "SELECT pg_catalog.set_config('default_toast_compression', $1, false)", rs.toast); err != nil {
		return fmt.Errorf("restore: session settings: %w", err)
	}
	return nil
}

// oneTransaction restores the stream in one transaction on rs.conn, then
// runs ANALYZE (unless SkipAnalyze or DeferAnalyze).
func (rs *restorer) oneTransaction(ctx context.Context, pre []object) (*Summary, error) {
	opts, sr := rs.opts, rs.sr
	if err := rs.session(ctx, rs.conn); err != nil {
		return nil, err
	}
	tx, err := rs.conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("start restore transaction: %w", err)
	}
	rs.tx = tx
	committed := false
	defer func() {
		if !committed {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = tx.Rollback(rctx)
		}
	}()
	summary, err := rs.run(ctx, pre)
	if err != nil {
		return nil, err
	}
	rs.progress(ProgressEvent{Phase: PhaseCommit, TablesDone: len(sr.header.Tables), TablesTotal: len(sr.header.Tables), Bytes: rs.bytes})
	if opts.BeforeCommit != nil {
		if err := opts.BeforeCommit(ctx, tx); err != nil {
			return nil, fmt.Errorf("restore: before commit: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit restore: %w", err)
	}
	committed = true
	rs.log.Info("restore committed", "tables", len(summary.Tables), "bytes", summary.Bytes)

	if !opts.SkipAnalyze && !opts.DeferAnalyze && len(sr.header.Tables) > 0 {
		rs.progress(ProgressEvent{Phase: PhaseAnalyze, TablesDone: len(sr.header.Tables), TablesTotal: len(sr.header.Tables), Bytes: rs.bytes})
		analyze(ctx, rs.conn, rs.connString, summary.Tables, rs.log)
		summary.Analyzed = true
	}
	rs.progress(ProgressEvent{Phase: PhaseDone, TablesDone: len(sr.header.Tables), TablesTotal: len(sr.header.Tables), Bytes: rs.bytes})
	return summary, nil
}

type restorer struct {
	conn       *pgx.Conn
	connString string
	tx         pgx.Tx
	sr         *streamReader
	opts       RestoreOptions
	log        *slog.Logger
	bytes      int64
	// readback: re-read each loaded table and compare its checksum.
	readback bool
	// The target server's server_version and server_version_num.
	targetVersion    string
	targetVersionNum int
	// toast is the sessions' default_toast_compression ("": the target's).
	toast string
}

// schemaErr makes a statement the target refused an *OlderTargetError when
// the target is of an older major than the source (CheckTargetVersion finds
// it before the restore; this covers callers that did not ask).
func (rs *restorer) schemaErr(ctx context.Context, err error) error {
	h := rs.sr.header
	if err == nil || ctx.Err() != nil || rs.targetVersionNum == 0 || rs.targetVersionNum/10000 >= h.ServerVersionNum/10000 {
		return err
	}
	return &OlderTargetError{SourceVersion: h.ServerVersion, SourceVersionNum: h.ServerVersionNum,
		TargetVersion: rs.targetVersion, TargetVersionNum: rs.targetVersionNum, Err: err}
}

func (rs *restorer) progress(ev ProgressEvent) {
	if rs.opts.Progress != nil {
		rs.opts.Progress(ev)
	}
}

func (rs *restorer) run(ctx context.Context, pre []object) (*Summary, error) {
	mem := rs.opts.MaintenanceWorkMem
	if mem == "" {
		mem = "256MB"
	}
	if _, err := rs.tx.Exec(ctx, "SELECT pg_catalog.set_config('maintenance_work_mem', $1, true)", mem); err != nil {
		return nil, fmt.Errorf("restore: set maintenance_work_mem: %w", err)
	}
	if err := prepareTarget(ctx, rs.tx, rs.opts.Replace); err != nil {
		return nil, err
	}
	tables := rs.sr.header.Tables
	rs.progress(ProgressEvent{Phase: PhaseSchema, TablesTotal: len(tables)})
	if err := rs.execAll(ctx, pre); err != nil {
		return nil, rs.schemaErr(ctx, err)
	}

	hashes := make([]*tableHash, len(tables))
	readback := make([]*tableHash, len(tables))
	for i, t := range tables {
		h, rb, err := rs.loadTable(ctx, i, t)
		if err != nil {
			var refused *refusedDataError
			if errors.As(err, &refused) {
				// The server refused the table's bytes: the stream may be
				// what is wrong, and its integrity error is the cause.
				return nil, rs.judgeStream(i, refused, hashes)
			}
			return nil, err
		}
		hashes[i], readback[i] = h, rb
	}
	summary, err := rs.sr.finish(hashes)
	if err != nil {
		return nil, err
	}
	if rs.readback {
		for i, t := range summary.Tables {
			if got := readback[i].sum(); got != t.Checksum || readback[i].rows != t.Rows {
				return nil, fmt.Errorf("%w: table %s.%s as loaded reads back as %d rows hashing to %s; the dump recorded %d rows hashing to %s",
					ErrChecksumMismatch, t.Schema, t.Name, readback[i].rows, got, t.Rows, t.Checksum)
			}
		}
	}
	rs.progress(ProgressEvent{Phase: PhasePostData, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	if err := rs.execAll(ctx, rs.sr.post); err != nil {
		return nil, rs.schemaErr(ctx, err)
	}
	return summary, nil
}

func (rs *restorer) execAll(ctx context.Context, objs []object) error {
	for _, o := range objs {
		if o.Kind == "SCHEMA" {
			var exists bool
			if err := rs.tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", o.Name).Scan(&exists); err != nil {
				return fmt.Errorf("restore schema %s: %w", o.Name, err)
			}
			if exists {
				continue
			}
		}
		if _, err := rs.tx.Exec(ctx, o.SQL); err != nil {
			return fmt.Errorf("restore %s %s.%s: %w", strings.ToLower(o.Kind), o.Schema, o.Name, err)
		}
	}
	return nil
}

// loadTable copies table i's data from the stream into the table and, when
// reading back, copies it back out to hash what the server now holds.
func (rs *restorer) loadTable(ctx context.Context, i int, t streamTable) (streamed, readback *tableHash, err error) {
	streamed, err = rs.copyIn(ctx, i, t, t.qualified())
	if err != nil || !rs.readback {
		return streamed, nil, err
	}
	name := t.Schema + "." + t.Name
	rs.progress(ProgressEvent{Phase: PhaseVerify, Table: name, TableRows: streamed.rows, TableBytes: streamed.bytes, TablesDone: i, TablesTotal: len(rs.sr.header.Tables), Bytes: rs.bytes})
	readback = t.newHash()
	if _, err := rs.conn.PgConn().CopyTo(ctx, readback, t.copyToSQL(t.qualified())); err != nil {
		return nil, nil, fmt.Errorf("verify table %s: %w", name, err)
	}
	return streamed, readback, nil
}

// copyIn copies table i's data from the stream into target (the table's
// quoted name, or its staging table's) with COPY FREEZE on rs.conn, whose
// transaction created or truncated it, and checks the server's row count.
func (rs *restorer) copyIn(ctx context.Context, i int, t streamTable, target string) (*tableHash, error) {
	name := t.Schema + "." + t.Name
	ev := ProgressEvent{Phase: PhaseData, Table: name, TablesDone: i, TablesTotal: len(rs.sr.header.Tables), Bytes: rs.bytes}
	rs.progress(ev)
	streamed := t.newHash()
	src := &recordingReader{r: rs.sr.tableData(i + 1), h: streamed, onRead: func(n int) {
		ev.TableBytes += int64(n)
		ev.Bytes += int64(n)
		rs.bytes += int64(n)
		if ev.TableBytes%(4<<20) < int64(n) {
			rs.progress(ev)
		}
	}}
	tag, err := rs.conn.PgConn().CopyFrom(ctx, src, t.copyFromSQL(target))
	if src.err != nil {
		return nil, fmt.Errorf("restore table %s: %w", name, src.err)
	}
	if err != nil {
		err = fmt.Errorf("restore table %s: %w", name, err)
		if isDataException(err) {
			return nil, &refusedDataError{err: err, h: streamed, src: src}
		}
		return nil, err
	}
	if t.NoData && streamed.bytes > 0 {
		return nil, corrupt("table %s is marked without data but has data members", name)
	}
	if tag.RowsAffected() != streamed.rows {
		return nil, fmt.Errorf("%w: table %s: the server loaded %d rows, the stream holds %d", ErrChecksumMismatch, name, tag.RowsAffected(), streamed.rows)
	}
	rs.log.Debug("loaded table", "table", name, "rows", streamed.rows, "bytes", streamed.bytes)
	return streamed, nil
}

// refusedDataError is a table's COPY that the server refused as bad data
// (isDataException), with what is needed to read the rest of the table's
// stream: the reader COPY read from and the hash of what it read.
type refusedDataError struct {
	err error
	h   *tableHash
	src io.Reader
}

func (e *refusedDataError) Error() string { return e.err.Error() }
func (e *refusedDataError) Unwrap() error { return e.err }

// judgeStream reads and hashes the rest of the stream after the server
// refused table i's data (refused), loading nothing, and checks it against
// its summary. It returns the stream's integrity error when it has one (a
// damaged stream is the cause of whatever the server said of its bytes),
// else the server's refusal. hashes holds the tables before i.
func (rs *restorer) judgeStream(i int, refused *refusedDataError, hashes []*tableHash) error {
	tables := rs.sr.header.Tables
	t := tables[i]
	if _, err := io.Copy(refused.h, refused.src); err != nil {
		return fmt.Errorf("restore table %s.%s: %w", t.Schema, t.Name, err)
	}
	if t.NoData && refused.h.bytes > 0 {
		return corrupt("table %s.%s is marked without data but has data members", t.Schema, t.Name)
	}
	hashes[i] = refused.h
	buf := make([]byte, feedChunk)
	for j := i + 1; j < len(tables); j++ {
		h, _, err := rs.readTable(j, tables[j], nil, buf, nil)
		if err != nil {
			return err
		}
		hashes[j] = h
	}
	if _, err := rs.sr.finish(hashes); err != nil {
		return err
	}
	return refused.err
}

// isDataException tells whether err is the server refusing the data it was
// given (SQLSTATE class 22, data exception: a COPY whose rows or binary
// header do not parse).
func isDataException(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22")
}

// recordingReader hashes what COPY FROM reads and keeps the stream's own
// error: pgx turns a reader error into a CopyFail whose server error would
// hide it.
type recordingReader struct {
	r      io.Reader
	h      *tableHash
	err    error
	onRead func(int)
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		_, _ = r.h.Write(p[:n])
		r.onRead(n)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}
