package pgtest

import (
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestRoundTripEdgeCases(t *testing.T) {
	src := harness.NewDatabase(t)
	loadEdgeSchema(t, src)
	stream, sum := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
	dst := harness.NewDatabase(t)
	got := restore(t, dst.URL, stream, pg.RestoreOptions{})
	assertSameDatabase(t, src.URL, dst.URL)
	if len(got.Tables) != len(sum.Tables) {
		t.Fatalf("restore summary has %d tables, dump %d", len(got.Tables), len(sum.Tables))
	}
}

func TestRoundTripAssisted(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, sum := dump(t, src.URL, pg.DumpOptions{})
	if sum.LastMigration != "20260413120000" {
		t.Errorf("last migration = %q, want the greatest id of the migrations table", sum.LastMigration)
	}
	rows := map[string]int64{}
	for _, ts := range sum.Tables {
		rows[ts.Name] = ts.Rows
	}
	if rows["hosts"] != int64(assisted.Small.Hosts) || rows["events"] != int64(assisted.Small.Events) {
		t.Errorf("dump counted %d hosts and %d events, generated %d and %d", rows["hosts"], rows["events"], assisted.Small.Hosts, assisted.Small.Events)
	}
	dst := harness.NewDatabase(t)
	restore(t, dst.URL, stream, pg.RestoreOptions{})
	assertSameDatabase(t, src.URL, dst.URL)
}
