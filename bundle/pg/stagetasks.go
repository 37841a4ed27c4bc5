package pg

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The workers' tasks for a loaded table (stageload.go): its ANALYZE, keys,
// indexes and the rest of its post-data group, and its readback.

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
	s.groupAdd()
	last := func(ctx context.Context, c *pgx.Conn) error {
		defer s.groupDone()
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
				s.groupDone()
				return err
			}
		}
		if err := timed(ctx, c, keys); err != nil {
			s.groupDone()
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
						s.groupDone()
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
func (s *stageRun) queue(to chan stageTask, task stageTask) {
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
