package pg

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
)

// analyzeWorkers is how many connections ANALYZE the restored tables at once.
const analyzeWorkers = 3

// Analyze runs ANALYZE on tables (a restore Summary's) over a few
// connections at once, biggest tables first. Restore does this after its
// commit unless RestoreOptions.SkipAnalyze; a caller that has other work to do
// after the database (restoring files) can skip it there and run Analyze
// beside that work. Per-table failures are logged as warnings; the error is
// for a target that cannot be reached at all.
func Analyze(ctx context.Context, connString string, tables []TableSummary, logger *slog.Logger) error {
	conn, err := connect(ctx, connString, "target")
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	analyze(ctx, conn, connString, tables, logger)
	return nil
}

// analyze runs ANALYZE on the restored tables after the commit, biggest first,
// on conn and up to analyzeWorkers-1 more connections. The data is committed
// by then: a failure only leaves statistics to autovacuum, so it is logged as
// a warning, not returned.
func analyze(ctx context.Context, conn *pgx.Conn, connString string, tables []TableSummary, log *slog.Logger) {
	log = logger(log)
	queue := append([]TableSummary(nil), tables...)
	sort.SliceStable(queue, func(i, j int) bool { return queue[i].DataBytes > queue[j].DataBytes })
	work := make(chan TableSummary)
	var wg sync.WaitGroup
	worker := func(c *pgx.Conn) {
		defer wg.Done()
		for t := range work {
			if _, err := c.Exec(ctx, "ANALYZE "+qualified(t.Schema, t.Name)); err != nil {
				log.Warn("analyze after restore failed; autovacuum will gather statistics later", "table", t.QualifiedName(), "error", err)
			}
		}
	}
	wg.Add(1)
	go worker(conn)
	for i := 1; i < analyzeWorkers && i < len(queue); i++ {
		c, err := connect(ctx, connString, "target")
		if err != nil {
			log.Warn("analyze on one connection only", "error", err)
			break
		}
		defer func() { _ = c.Close(context.Background()) }()
		wg.Add(1)
		go worker(c)
	}
	for _, t := range queue {
		work <- t
	}
	close(work)
	wg.Wait()
}
