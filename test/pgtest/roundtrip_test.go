package pgtest

import (
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
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
