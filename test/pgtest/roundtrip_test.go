package pgtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestRoundTripEdgeCases(t *testing.T) {
	src := harness.NewDatabase(t)
	loadEdgeSchema(t, src)
	stream, sum := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
	dst := harness.NewDatabase(t)
	got := restore(t, dst.URL, stream, pg.RestoreOptions{Readback: pg.ReadbackAlways})
	assertSameDatabase(t, src.URL, dst.URL)
	if len(got.Tables) != len(sum.Tables) {
		t.Fatalf("restore summary has %d tables, dump %d", len(got.Tables), len(sum.Tables))
	}
}

func TestRoundTripAssisted(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	// The generator rebuilds keys and indexes around its bulk load: the schema
	// must still be exactly the fixture's.
	plain := harness.NewDatabase(t)
	assisted.LoadSchema(t, plain.URL)
	assertSameText(t, "generated schema", pgDump(t, plain.URL, "--schema-only"), pgDump(t, src.URL, "--schema-only"))
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

// TestRestoreIntoSecondServer restores both schemas into databases of a
// private, independently initdb'ed server.
func TestRestoreIntoSecondServer(t *testing.T) {
	srv := harness.StartPostgres(t)
	for _, c := range []struct {
		name string
		src  func(t *testing.T) *harness.Database
	}{
		{"assisted", func(t *testing.T) *harness.Database { return assisted.NewDatabase(t, assisted.Small) }},
		{"edge", func(t *testing.T) *harness.Database {
			db := harness.NewDatabase(t)
			loadEdgeSchema(t, db)
			return db
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := c.src(t)
			stream, _ := dump(t, src.URL, pg.DumpOptions{})
			dst := srv.NewDatabase(t)
			restore(t, dst.URL, stream, pg.RestoreOptions{})
			assertSameDatabase(t, src.URL, dst.URL)
		})
	}
}

// TestDumpOptions checks table selection: excluded tables are absent, tables
// without data keep their definition, and the stream verifies offline.
func TestDumpOptions(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, sum := dump(t, src.URL, pg.DumpOptions{ExcludeTables: pg.DefaultExcludeTables, ExcludeTableData: []string{"public.events"}})
	for _, ts := range sum.Tables {
		if ts.Name == "release_images" {
			t.Errorf("release_images is in the dump although excluded")
		}
		if ts.Name == "events" && ts.Rows != 0 {
			t.Errorf("events has %d rows although its data is excluded", ts.Rows)
		}
	}
	if _, err := pg.Verify(ctxFor(t), bytes.NewReader(stream)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	dst := harness.NewDatabase(t)
	restore(t, dst.URL, stream, pg.RestoreOptions{})
	c := dst.Connect(t)
	var images, events, hosts int
	err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'release_images'),
		(SELECT count(*) FROM public.events), (SELECT count(*) FROM public.hosts)`).Scan(&images, &events, &hosts)
	if err != nil {
		t.Fatal(err)
	}
	if images != 0 || events != 0 || hosts != assisted.Small.Hosts {
		t.Fatalf("restored: release_images tables %d (want 0), events %d (want 0), hosts %d (want %d)", images, events, hosts, assisted.Small.Hosts)
	}

	only, _ := dump(t, src.URL, pg.DumpOptions{IncludeTables: []string{"cluster*", "public.migrations"}})
	got, err := pg.Verify(ctxFor(t), bytes.NewReader(only))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range got.Tables {
		names = append(names, ts.Name)
	}
	if strings.Join(names, ",") != "cluster_networks,clusters,migrations" {
		t.Fatalf("include patterns selected %v", names)
	}
}

// TestDumpRefusesUnsupportedObjects: a view would be lost, so Dump refuses.
func TestDumpRefusesUnsupportedObjects(t *testing.T) {
	src := harness.NewDatabase(t)
	src.Exec(t, "CREATE TABLE public.t (a int); CREATE VIEW public.v AS SELECT a FROM public.t")
	_, err := pg.Dump(ctxFor(t), src.URL, io.Discard, pg.DumpOptions{})
	if !errors.Is(err, pg.ErrUnsupportedObject) || !strings.Contains(err.Error(), "view public.v") {
		t.Fatalf("err = %v, want ErrUnsupportedObject naming view public.v", err)
	}
}

// TestSecretsStayOut plants a password in connection strings that fail and
// checks that no error repeats it.
func TestSecretsStayOut(t *testing.T) {
	const secret = "S3cr3t-Pl4nted-PW"
	src := harness.NewDatabase(t)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	for _, url := range []string{
		"postgres://postgres:" + secret + "@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=2",
		"postgres://postgres:" + secret + "@127.0.0.1:5432/no_such_database_kat?sslmode=disable",
		"host=127.0.0.1 port=5432 user=postgres password=" + secret + " dbname=no_such_database_kat sslmode=disable",
		"postgres://postgres:" + secret + "@127.0.0.1:5432/%zz",
	} {
		_, err := pg.Dump(ctxFor(t), url, io.Discard, pg.DumpOptions{})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("dump error %v: want an error without the password", err)
		}
		_, err = pg.Restore(ctxFor(t), url, bytes.NewReader(stream), pg.RestoreOptions{})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("restore error %v: want an error without the password", err)
		}
	}
}

// TestAnalyze: a restore that skips ANALYZE leaves the tables without
// manual statistics; Analyze then gathers them.
func TestAnalyze(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	sum := restore(t, dst.URL, stream, pg.RestoreOptions{SkipAnalyze: true})
	conn := dst.Connect(t)
	analyzed := func() int {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_user_tables
			WHERE schemaname = 'public' AND relname IN ('events', 'hosts') AND last_analyze IS NOT NULL`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := analyzed(); n != 0 {
		t.Fatalf("%d tables were analyzed although the restore skipped ANALYZE", n)
	}
	if err := pg.Analyze(ctxFor(t), dst.URL, sum.Tables, nil); err != nil {
		t.Fatal(err)
	}
	// Statistics counters reach other sessions within about a second.
	deadline := time.Now().Add(10 * time.Second)
	for analyzed() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of events and hosts show a manual ANALYZE after Analyze, want 2", analyzed())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestVerifyAssistedSchemaWithoutTheGrammar: every statement of a dump of
// assisted-service's schema (the project's own DDL and, when ../shared is
// present, the real release schema) is checked on the fast path's tree, so
// verifying and restoring such a bundle never compiles PostgreSQL's grammar
// (1.5 s of CPU and 250 MB per process); the edge-case schema, which holds
// shapes outside the fast path, still goes to the grammar, and both verify.
func TestVerifyAssistedSchemaWithoutTheGrammar(t *testing.T) {
	schemas := []string{harness.OwnAssistedSchemaPath()}
	if p := harness.RealAssistedSchemaPath(); p != "" {
		schemas = append(schemas, p)
	}
	for _, path := range schemas {
		db := harness.NewDatabase(t)
		harness.LoadSQLFile(t, db.URL, path)
		stream, _ := dump(t, db.URL, pg.DumpOptions{})
		fast0, grammar0 := pg.ParserStats()
		if _, err := pg.Verify(ctxFor(t), bytes.NewReader(stream)); err != nil {
			t.Fatalf("verify the dump of %s: %v", path, err)
		}
		fast1, grammar1 := pg.ParserStats()
		if grammar1 != grammar0 || fast1-fast0 < 20 {
			t.Errorf("%s: %d statements checked on the fast path, %d with the grammar; want every one (at least 20) on the fast path",
				path, fast1-fast0, grammar1-grammar0)
		}
	}
	edge := harness.NewDatabase(t)
	loadEdgeSchema(t, edge)
	stream, _ := dump(t, edge.URL, pg.DumpOptions{})
	_, grammar0 := pg.ParserStats()
	if _, err := pg.Verify(ctxFor(t), bytes.NewReader(stream)); err != nil {
		t.Fatalf("verify the edge-case dump: %v", err)
	}
	if _, grammar1 := pg.ParserStats(); grammar1 == grammar0 {
		t.Error("the edge-case schema was checked without the grammar; it holds shapes (domains, ranges, exclusion constraints, comments) the fast path leaves to it")
	}
}
