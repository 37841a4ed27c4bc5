package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// Steps 3 to 5 of the staged restore (staged.go): the tables are loaded,
// indexed and analyzed on several connections, then moved into place.
//
// Three kinds of goroutines run in one errgroup: the loaders (a connection
// each; they take the tables in stream order and COPY each into its staging
// table), the workers (a connection each; they build a loaded table's keys
// and indexes, re-read it, ANALYZE it), and, in the caller's goroutine, the
// reader of the stream, which feeds the loaders. The first goroutine to fail
// cancels the others, and its error is the cause the restore returns.

// stageRun is one staged restore in progress.
type stageRun struct {
	rs *restorer
	p  *stagePlan
	// ctx is the group's: cancelled at the first failure of a loader or a
	// worker (its cause), or when the run stops (cancel).
	ctx    context.Context
	cancel context.CancelCauseFunc
	g      *errgroup.Group
	// conns are the connections the run opened (rs.conn is the caller's);
	// loaders take the tables: rs.conn, then conns[workers:].
	conns   []*pgx.Conn
	loaders []*pgx.Conn

	mu       sync.Mutex
	analyzed bool

	// tasks go to the workers; chains (a table's ANALYZE and keys, the end
	// of its group) before single index builds, so that what must run one
	// after the other starts first.
	tasks, chains chan stageTask
	// pending counts the tables' post-data groups not done yet, plus one
	// until every table is loaded; groupsDone is closed when it reaches 0.
	pending    atomic.Int32
	groupsDone chan struct{}
	// readback[i] is table i as re-read from the target (when reading back).
	readback []*tableHash
	// loading is true until the last table is loaded, and busy counts the
	// worker tasks running or queued. An index build uses the server's
	// parallel workers only when it is all there is to do: while anything
	// else runs, every core is taken already and a parallel build only adds
	// the cost of its workers' merge (docs/architecture.md, "Measured
	// choices").
	loading atomic.Bool
	busy    atomic.Int32
	// maintenanceWorkers is the server's max_parallel_maintenance_workers.
	maintenanceWorkers string
	// feeder carries the rows from the stream to the loaders.
	feeder *feeder
}

// stageTask is a worker's task, run on the worker's connection.
type stageTask func(context.Context, *pgx.Conn) error

// errStopped is the cause of a run the caller stopped (its own failure, or
// its end): not a failure of the run's goroutines.
var errStopped = errors.New("the staged restore stopped")

// loadStaged runs steps 3 to 5 on committed staging schemas.
func (rs *restorer) loadStaged(parent context.Context, p *stagePlan) (*Summary, error) {
	s, err := rs.startStageRun(parent, p)
	if err != nil {
		return nil, err
	}
	defer s.close()
	summary, err := s.loadTables()
	if err != nil {
		return nil, err
	}
	if err := s.finishPostData(); err != nil {
		return nil, err
	}
	if err := s.checkReadback(summary); err != nil {
		return nil, err
	}
	tables := len(rs.sr.header.Tables)
	rs.progress(ProgressEvent{Phase: PhaseCommit, TablesDone: tables, TablesTotal: tables, Bytes: rs.bytes})
	if err := rs.finalTransaction(parent, p); err != nil {
		return nil, err
	}
	rs.log.Info("restore committed", "tables", len(summary.Tables), "bytes", summary.Bytes, "workers", len(s.conns)+1-len(s.loaders))
	summary.Analyzed = s.analyzed && tables > 0
	rs.progress(ProgressEvent{Phase: PhaseDone, TablesDone: tables, TablesTotal: tables, Bytes: rs.bytes})
	return summary, nil
}

// startStageRun prepares the connections (rs.conn and the run's own: the
// workers', then the other loaders') and starts the workers.
func (rs *restorer) startStageRun(parent context.Context, p *stagePlan) (*stageRun, error) {
	tables := rs.sr.header.Tables
	base, cancel := context.WithCancelCause(parent)
	g, ctx := errgroup.WithContext(base)
	s := &stageRun{rs: rs, p: p, ctx: ctx, cancel: cancel, g: g, readback: make([]*tableHash, len(tables)), feeder: newFeeder(rs.opts.SpoolDir),
		tasks:  make(chan stageTask, 2*len(tables)+len(p.trial)+1),
		chains: make(chan stageTask, 2*len(tables)+1), analyzed: !rs.opts.SkipAnalyze, groupsDone: make(chan struct{})}
	s.pending.Store(1) // until every table is loaded
	// A failure anywhere wakes the reader and the loaders waiting on a feed.
	context.AfterFunc(ctx, s.feeder.abort)
	if err := s.openConns(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openConns sets up rs.conn, opens the run's other connections and starts
// a worker on each of the workers' ones.
func (s *stageRun) openConns() error {
	rs := s.rs
	if err := rs.stagedSession(s.ctx, rs.conn); err != nil {
		return err
	}
	if err := rs.conn.QueryRow(s.ctx, "SELECT pg_catalog.current_setting('max_parallel_maintenance_workers')").Scan(&s.maintenanceWorkers); err != nil {
		return fmt.Errorf("restore: read settings: %w", err)
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
	for i := 0; i < n+nl-1; i++ {
		c, err := connect(s.ctx, rs.connString, "target")
		if err == nil {
			err = rs.stagedSession(s.ctx, c)
		}
		if err != nil {
			if c != nil {
				_ = c.Close(context.Background())
			}
			return err
		}
		s.conns = append(s.conns, c)
	}
	// The first connection (rs.conn) and nl-1 more load; the rest work.
	s.loaders = append([]*pgx.Conn{rs.conn}, s.conns[n:]...)
	for _, c := range s.conns[:n] {
		s.startWorker(c)
	}
	return nil
}

// close stops what still runs and closes the run's connections.
func (s *stageRun) close() {
	s.cancel(errStopped)
	_ = s.g.Wait()
	s.feeder.close()
	for _, c := range s.conns {
		_ = c.Close(context.Background())
	}
}

// fail ends the run on the caller's own failure err, and returns the cause
// to report: the first failure of a loader or a worker when one failed
// before (err is then at most its echo), else err.
func (s *stageRun) fail(err error) error {
	s.cancel(errStopped)
	if context.Cause(s.ctx) == errStopped { //nolint:errorlint // our own value
		return err
	}
	if first := s.g.Wait(); first != nil {
		return first
	}
	return err
}

// failed returns the cause when a loader or a worker failed (or the
// caller's context ended), else nil.
func (s *stageRun) failed() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return s.fail(s.ctx.Err())
}

// loadTables is step 3: the loaders take the tables in stream order, each
// table in a transaction of its own that truncates it first so that COPY
// may FREEZE; the caller's goroutine reads the stream into their feeds. The
// workers index each table as soon as it is loaded. It ends once every
// table is loaded and the stream verified against its summary; then the
// loaders' connections but rs.conn join the workers.
func (s *stageRun) loadTables() (*Summary, error) {
	rs := s.rs
	tables := rs.sr.header.Tables
	jobs := make(chan loadJob, len(tables))
	var loaders sync.WaitGroup
	for _, c := range s.loaders {
		loaders.Add(1)
		s.g.Go(func() error {
			defer loaders.Done()
			return s.loader(c, jobs)
		})
	}
	summary, err := s.readStream(jobs)
	close(jobs)
	if errors.Is(err, ErrChecksumMismatch) || errors.Is(err, ErrCorruptStream) {
		// The stream is damaged: that is the cause, whatever a loader's
		// COPY said of the same bytes.
		s.cancel(errStopped)
		_ = s.g.Wait()
		return nil, err
	}
	if err != nil {
		return nil, s.fail(err)
	}
	loaders.Wait()
	if err := s.failed(); err != nil {
		return nil, err
	}
	rs.log.Debug("staged every table", "loaders", len(s.loaders), "spilled", s.feeder.spilled)
	if s.feeder.spoolErr != nil {
		rs.log.Warn("the restore stopped reading ahead: its spool file could not grow (RestoreOptions.SpoolDir)", "error", s.feeder.spoolErr)
	}
	s.loading.Store(false)
	// The other loaders' connections build indexes now (rs.conn stays for
	// the foreign keys and the final transaction).
	for _, c := range s.loaders[1:] {
		s.startWorker(c)
	}
	return summary, nil
}

// readStream reads every table's data from the stream into a feed that a
// loader copies into its staging table (jobs), then checks the stream's
// end against its summary.
func (s *stageRun) readStream(jobs chan<- loadJob) (*Summary, error) {
	rs := s.rs
	tables := rs.sr.header.Tables
	hashes := make([]*tableHash, len(tables))
	buf := make([]byte, feedChunk)
	verifyOnly := false // a loader's COPY refused the data: only verify the rest
	for i, t := range tables {
		var fd *feed
		if !verifyOnly {
			fd = s.feeder.newFeed()
			jobs <- loadJob{i: i, t: t, fd: fd}
		}
		// When the server refused a table's data, the stream may be what is
		// wrong, and its integrity error is the one to report: the rest is
		// read and hashed, loading nothing.
		h, refused, err := rs.readTable(i, t, fd, buf, s.dataRefused)
		verifyOnly = verifyOnly || refused
		if err != nil {
			// The cause first, then the end of the feed: its loader's
			// error (the feed's, wrapped) is not the cause.
			s.cancel(errStopped)
			if fd != nil {
				fd.finish(0, err)
			}
			return nil, err
		}
		hashes[i] = h
	}
	summary, err := rs.sr.finish(hashes)
	if err == nil && verifyOnly {
		err = errLoadAborted // the stream is sound: the loader's error is the cause
	}
	return summary, err
}

// dataRefused tells whether a loader failed because the server refused the
// data it was given (SQLSTATE class 22, data exception: a COPY whose rows or
// binary header do not parse).
func (s *stageRun) dataRefused() bool { return isDataException(context.Cause(s.ctx)) }

// loader copies the tables of jobs, one after the other, on c.
func (s *stageRun) loader(c *pgx.Conn, jobs <-chan loadJob) error {
	for {
		s.feeder.loaderIdle()
		job, ok := <-jobs
		s.feeder.loaderBusy()
		if !ok {
			return nil
		}
		if err := s.load(s.ctx, c, job); err != nil {
			return err
		}
	}
}

// startWorker runs tasks on c until the run ends or a task fails: chains
// first, then single tasks.
func (s *stageRun) startWorker(c *pgx.Conn) {
	s.g.Go(func() error {
		tasks, chains := s.tasks, s.chains
		for tasks != nil || chains != nil {
			var task stageTask
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
				case <-s.ctx.Done():
					return nil
				}
			}
			err := task(s.ctx, c)
			s.busy.Add(-1)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// groupAdd and groupDone count the tables' post-data groups in progress.
func (s *stageRun) groupAdd() { s.pending.Add(1) }

func (s *stageRun) groupDone() {
	if s.pending.Add(-1) == 0 {
		close(s.groupsDone)
	}
}

// finishPostData is step 4's end: once every table's group is done, what
// follows them (from the first foreign key on) runs on rs.conn, then the
// ANALYZE of the tables whose expression indexes it built; then the
// workers finish their last tasks (readbacks) and stop.
func (s *stageRun) finishPostData() error {
	rs, p := s.rs, s.p
	tables := rs.sr.header.Tables
	rs.progress(ProgressEvent{Phase: PhasePostData, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	s.groupDone() // every table is loaded
	select {
	case <-s.groupsDone:
	case <-s.ctx.Done():
	}
	if err := s.failed(); err != nil {
		return err
	}
	if len(p.after) > 0 {
		if err := s.runGroup(s.ctx, rs.conn, p.after); err != nil {
			return s.fail(err)
		}
		for _, t := range tables {
			if p.afterAnalyze[qname{t.Schema, t.Name}] && !rs.opts.SkipAnalyze {
				if _, err := rs.conn.Exec(s.ctx, "ANALYZE "+p.stagedName(t.Schema, t.Name)); err != nil {
					return s.fail(fmt.Errorf("analyze %s.%s: %w", t.Schema, t.Name, err))
				}
			}
		}
	}
	rs.progress(ProgressEvent{Phase: PhaseAnalyze, TablesDone: len(tables), TablesTotal: len(tables), Bytes: rs.bytes})
	// Nothing queues tasks any more: the groups are done, the readbacks
	// were queued as their tables were loaded.
	close(s.tasks)
	close(s.chains)
	return s.g.Wait()
}

// checkReadback compares the tables as re-read from the target with the
// dump's checksums and row counts (when reading back).
func (s *stageRun) checkReadback(summary *Summary) error {
	if !s.rs.readback {
		return nil
	}
	for i, t := range summary.Tables {
		if got := s.readback[i]; got == nil || got.sum() != t.Checksum || got.rows != t.Rows {
			rows, sum := int64(0), "nothing"
			if got != nil {
				rows, sum = got.rows, got.sum()
			}
			return fmt.Errorf("%w: table %s.%s as loaded reads back as %d rows hashing to %s; the dump recorded %d rows hashing to %s",
				ErrChecksumMismatch, t.Schema, t.Name, rows, sum, t.Rows, t.Checksum)
		}
	}
	return nil
}

// loadJob is one table for a loader.
type loadJob struct {
	i  int
	t  streamTable
	fd *feed
}

// readTable reads table i's data from the stream into its feed, hashing and
// counting it as the dump did.
// fd nil reads and hashes the table only; so does the rest of the table
// when fd refuses data and verify says to go on (refused is then true).
func (rs *restorer) readTable(i int, t streamTable, fd *feed, buf []byte, verify func() bool) (h *tableHash, refused bool, err error) {
	name := t.Schema + "." + t.Name
	ev := ProgressEvent{Phase: PhaseData, Table: name, TablesDone: i, TablesTotal: len(rs.sr.header.Tables), Bytes: rs.bytes}
	rs.progress(ev)
	h = t.newHash()
	src := rs.sr.tableData(i + 1)
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			_, _ = h.Write(buf[:n])
			if fd != nil {
				if perr := fd.push(buf[:n]); perr != nil {
					if !errors.Is(perr, errLoadAborted) || !verify() {
						return nil, refused, perr
					}
					fd, refused = nil, true
				}
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
			return nil, refused, fmt.Errorf("restore table %s: %w", name, err)
		}
	}
	if t.NoData && h.bytes > 0 {
		return nil, refused, corrupt("table %s is marked without data but has data members", name)
	}
	if fd != nil {
		fd.finish(h.rows, nil)
	}
	return h, refused, nil
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
