package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/pgsnap"
)

// TestMain lets a test run a restore in a child process of its own, to
// SIGKILL it at a chosen point (restoreChild).
func TestMain(m *testing.M) {
	if os.Getenv("KAT_PGTEST_CHILD") == "restore" {
		os.Exit(restoreChild())
	}
	os.Exit(m.Run())
}

// restoreChild restores KAT_CHILD_STREAM into KAT_CHILD_URL and, on reaching
// the point KAT_CHILD_AT, prints "AT <point>" and waits to be killed. Points:
// a phase ("post-data": every row staged; "analyze": every index built;
// "commit": before the final transaction), "data:<schema.table>" (that
// table's load starts, the tables before it are staged) and "before-commit"
// (inside the final transaction, everything moved, not committed).
func restoreChild() int {
	stream, err := os.ReadFile(os.Getenv("KAT_CHILD_STREAM"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	at := os.Getenv("KAT_CHILD_AT")
	hold := func(point string) {
		if point == at {
			fmt.Println("AT " + point)
			_ = os.Stdout.Sync()
			select {}
		}
	}
	opts := pg.RestoreOptions{
		Replace: os.Getenv("KAT_CHILD_REPLACE") == "1",
		Progress: func(ev pg.ProgressEvent) {
			if ev.Phase == pg.PhaseData {
				if ev.TableBytes == 0 {
					hold("data:" + ev.Table)
				}
				return
			}
			hold(string(ev.Phase))
		},
		BeforeCommit: func(context.Context, pgx.Tx) error {
			hold("before-commit")
			return nil
		},
	}
	if _, err := pg.Restore(context.Background(), os.Getenv("KAT_CHILD_URL"), bytes.NewReader(stream), opts); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("DONE")
	return 0
}

// killRestoreAt runs a restore of stream into url in a child process and
// SIGKILLs it once it reports reaching point at.
func killRestoreAt(t *testing.T, url string, stream []byte, at string, replace bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "stream")
	if err := os.WriteFile(file, stream, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KAT_PGTEST_CHILD=restore", "KAT_CHILD_STREAM="+file, "KAT_CHILD_URL="+url, "KAT_CHILD_AT="+at)
	if replace {
		cmd.Env = append(cmd.Env, "KAT_CHILD_REPLACE=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok || strings.HasPrefix(l, "ERR") || l == "DONE" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("the restore ended (%q) without reaching %s\n%s", l, at, stderr.String())
			}
			if l == "AT "+at {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				go func() {
					for range lines {
					}
				}()
				return
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the restore never reached %s\n%s", at, stderr.String())
		}
	}
}

// snapshot is pgsnap.Take without our staging schemas (what a killed restore
// leaves and the next one drops).
func snapshot(t testing.TB, url string) *pgsnap.Snapshot {
	t.Helper()
	s, err := pgsnap.Take(ctxFor(t), url)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range s.Catalog {
		if !strings.Contains(l, "kubectl_assisted_staging_") {
			kept = append(kept, l)
		}
	}
	s.Catalog = kept
	for k := range s.Rows {
		if strings.HasPrefix(k, "kubectl_assisted_staging_") {
			delete(s.Rows, k)
		}
	}
	return s
}

func assertSameSnapshot(t testing.TB, what string, want, got *pgsnap.Snapshot) {
	t.Helper()
	if d := pgsnap.Diff(want, got, 20); len(d) > 0 {
		t.Fatalf("%s differs:\n%s", what, strings.Join(d, "\n"))
	}
}

// stagedProbe returns a BeforeCommit hook that records whether another
// session sees a staging schema of ours at that moment (a staged restore's
// final transaction runs while its committed staging schemas exist; a
// one-transaction restore has committed nothing), and the answer.
func stagedProbe(t testing.TB, url string) (func(context.Context, pgx.Tx) error, func() bool) {
	seen := false
	return func(ctx context.Context, _ pgx.Tx) error {
		seen = len(stagingSchemas(t, url)) > 0
		return nil
	}, func() bool { return seen }
}

// edgeStagedSchema is the edge-case schema without its extension (citext,
// whose objects a staged restore would need before its staging schemas):
// types, domains, ranges, composites, identities, sequences owned and not,
// a second schema with a space and capitals, comments, CLUSTER ON, replica
// identity using an index.
func edgeStagedSchema(t testing.TB, db *harness.Database) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"edge-schema.sql", "edge-data.sql"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "CREATE EXTENSION citext WITH SCHEMA public;", "")
		s = strings.ReplaceAll(s, "public.citext", "text")
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		harness.LoadSQLFile(t, db.URL, filepath.Join(dir, f))
	}
}

// TestStagedRestoreMatchesOneTransaction: the staged restore (several
// connections, staging schemas, one final transaction) gives the same
// catalog and rows as the one-transaction restore and as the source, with
// statistics gathered, and leaves no staging schema.
func TestStagedRestoreMatchesOneTransaction(t *testing.T) {
	for _, c := range []struct {
		name string
		load func(t *testing.T, db *harness.Database)
	}{
		{"assisted", func(t *testing.T, db *harness.Database) {
			assisted.LoadSchema(t, db.URL)
			if err := assisted.Generate(context.Background(), db.URL, assisted.Small); err != nil {
				t.Fatal(err)
			}
		}},
		{"edge", func(t *testing.T, db *harness.Database) { edgeStagedSchema(t, db) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := harness.NewDatabase(t)
			c.load(t, src)
			stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
			want := snapshot(t, src.URL)

			staged := harness.NewDatabase(t)
			probe, wasStaged := stagedProbe(t, staged.URL)
			sum := restore(t, staged.URL, stream, pg.RestoreOptions{BeforeCommit: probe, Readback: pg.ReadbackAlways})
			if !wasStaged() {
				t.Fatal("the restore did not stage: this test compares nothing")
			}
			if !sum.Analyzed {
				t.Error("the staged restore did not report its statistics")
			}
			one := harness.NewDatabase(t)
			probe1, oneStaged := stagedProbe(t, one.URL)
			restore(t, one.URL, stream, pg.RestoreOptions{SingleTransaction: true, BeforeCommit: probe1})
			if oneStaged() {
				t.Fatal("SingleTransaction staged")
			}
			assertSameSnapshot(t, "staged restore vs source", want, snapshot(t, staged.URL))
			assertSameSnapshot(t, "one-transaction restore vs source", want, snapshot(t, one.URL))
			assertSameDatabase(t, src.URL, staged.URL)
			if left := stagingSchemas(t, staged.URL); len(left) > 0 {
				t.Fatalf("the staged restore left %v", left)
			}
			// Statistics were gathered in staging and moved with the tables:
			// every table with rows has them, and the indexed expressions
			// have theirs as after the one-transaction restore's ANALYZE.
			statTables, statIndexes := statistics(t, staged)
			withRows := 0
			for _, ts := range sum.Tables {
				if ts.Rows > 0 {
					withRows++
				}
			}
			if statTables != withRows {
				t.Fatalf("statistics on %d tables after the restore, want the %d with rows", statTables, withRows)
			}
			if c.name == "edge" && statIndexes == 0 {
				t.Fatal("no statistics on the edge schema's indexed expression")
			}
			if _, oneIndexes := statistics(t, one); statIndexes != oneIndexes {
				t.Fatalf("statistics on %d indexed expressions after the staged restore, %d after the one-transaction one", statIndexes, oneIndexes)
			}
		})
	}
}

// statistics counts the tables and the indexes (on expressions) that
// pg_stats has rows for.
func statistics(t testing.TB, db *harness.Database) (tables, indexes int) {
	t.Helper()
	err := db.Connect(t).QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE c.relkind = 'r'), count(*) FILTER (WHERE c.relkind = 'i')
		FROM (SELECT DISTINCT schemaname, tablename FROM pg_catalog.pg_stats WHERE schemaname NOT IN ('pg_catalog', 'information_schema')) s
		JOIN pg_catalog.pg_namespace n ON n.nspname = s.schemaname
		JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename`).Scan(&tables, &indexes)
	if err != nil {
		t.Fatal(err)
	}
	return tables, indexes
}

// TestStagedRestoreKilled SIGKILLs a staged restore at each of its steps,
// into an empty target and (Replace) into one with data: the target reads
// exactly as before, whatever was staged is not seen, and the next restore
// drops the staging schemas and gives the source's database.
func TestStagedRestoreKilled(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
	want := snapshot(t, src.URL)
	points := []string{"data:public.events", "post-data", "analyze", "commit", "before-commit"}
	for _, replace := range []bool{false, true} {
		for _, at := range points {
			name := at
			if replace {
				name = "replace/" + at
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dst := harness.NewDatabase(t)
				if replace {
					seededTarget(t, dst)
				}
				before := snapshot(t, dst.URL)
				killRestoreAt(t, dst.URL, stream, at, replace)
				if left := stagingSchemas(t, dst.URL); len(left) == 0 {
					t.Error("the killed restore left no staging schema: it did not stage before the kill")
				}
				// A backend of the killed restore may still be ending; the
				// target must read as before all the same.
				assertSameSnapshot(t, "target after the kill", before, snapshot(t, dst.URL))
				if err := pg.CheckTarget(ctxFor(t), dst.URL); replace != errors.Is(err, pg.ErrTargetNotEmpty) || (!replace && err != nil) {
					t.Fatalf("CheckTarget after the kill: %v (the staging schemas do not count)", err)
				}
				restore(t, dst.URL, stream, pg.RestoreOptions{Replace: replace})
				assertSameSnapshot(t, "target after the rerun", want, snapshot(t, dst.URL))
				if left := stagingSchemas(t, dst.URL); len(left) > 0 {
					t.Fatalf("the rerun left %v", left)
				}
			})
		}
	}
}

// TestStagedRestoreInvisibleUntilCommit reads the target from another session
// at every step of a staged restore: an empty target shows no table until the
// commit, a target with data (Replace) shows its old rows, without waiting,
// until the final transaction, which it never sees half done.
func TestStagedRestoreInvisibleUntilCommit(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			dst := harness.NewDatabase(t)
			if replace {
				seededTarget(t, dst)
			}
			reader := dst.Connect(t)
			ctx := ctxFor(t)
			if _, err := reader.Exec(ctx, "SET statement_timeout = '60s'"); err != nil {
				t.Fatal(err)
			}
			checks := 0
			look := func(where string, inFinal bool) {
				checks++
				var tables int
				if err := reader.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
					WHERE n.nspname = 'public' AND c.relkind = 'r'`).Scan(&tables); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if !replace {
					if tables != 0 {
						t.Fatalf("%s: a reader sees %d tables in public before the commit", where, tables)
					}
					return
				}
				q := "SELECT (SELECT count(*) FROM public.clusters), (SELECT count(*) FROM public.extra)"
				if inFinal {
					// The final transaction holds the old tables' locks:
					// the reader waits or, as here, gives up, never sees it half done.
					if _, err := reader.Exec(ctx, "SET lock_timeout = '300ms'"); err != nil {
						t.Fatal(err)
					}
					defer func() { _, _ = reader.Exec(ctx, "SET lock_timeout = 0") }()
				}
				var clusters, extra int
				err := reader.QueryRow(ctx, q).Scan(&clusters, &extra)
				var pe *pgconn.PgError
				switch {
				case inFinal && errors.As(err, &pe) && pe.Code == "55P03":
				case err != nil:
					t.Fatalf("%s: reading the old rows: %v", where, err)
				case clusters != tiny.Clusters || extra != 1:
					t.Fatalf("%s: a reader sees %d clusters and %d extra rows, want the old %d and 1", where, clusters, extra, tiny.Clusters)
				}
			}
			last := pg.Phase("")
			probe, wasStaged := stagedProbe(t, dst.URL)
			restore(t, dst.URL, stream, pg.RestoreOptions{Replace: replace,
				Progress: func(ev pg.ProgressEvent) {
					if ev.Phase != last {
						last = ev.Phase
						if ev.Phase != pg.PhaseDone {
							look(string(ev.Phase), false)
						}
					}
				},
				BeforeCommit: func(ctx context.Context, tx pgx.Tx) error {
					look("before commit", true)
					return probe(ctx, tx)
				}})
			if !wasStaged() {
				t.Fatal("the restore did not stage: this test shows nothing")
			}
			if checks < 5 {
				t.Fatalf("looked at the target %d times, want every step", checks)
			}
			var clusters int
			if err := reader.QueryRow(ctx, "SELECT count(*) FROM public.clusters").Scan(&clusters); err != nil || clusters != assisted.Small.Clusters {
				t.Fatalf("after the commit a reader sees %d clusters (%v), want %d", clusters, err, assisted.Small.Clusters)
			}
		})
	}
}

// TestStagedRestoreLeftovers: a staging schema of ours does not make a
// target non-empty and the next restore drops it; a schema that only looks
// like ours (the name without our mark) is the user's and is refused.
func TestStagedRestoreLeftovers(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	dst.Exec(t, `CREATE SCHEMA kubectl_assisted_staging_0123456789ab_1;
		COMMENT ON SCHEMA kubectl_assisted_staging_0123456789ab_1 IS 'kubectl-assisted restore staging: left by a killed restore';
		CREATE TABLE kubectl_assisted_staging_0123456789ab_1.hosts (id text)`)
	if err := pg.CheckTarget(ctxFor(t), dst.URL); err != nil {
		t.Fatalf("CheckTarget with a leftover staging schema: %v", err)
	}
	if err := pg.Preflight(ctxFor(t), dst.URL, bytes.NewReader(stream), pg.PreflightOptions{}); err != nil {
		t.Fatalf("Preflight with a leftover staging schema: %v", err)
	}
	restore(t, dst.URL, stream, pg.RestoreOptions{})
	if left := stagingSchemas(t, dst.URL); len(left) > 0 {
		t.Fatalf("the restore left %v", left)
	}
	assertSameSnapshot(t, "restored target", snapshot(t, src.URL), snapshot(t, dst.URL))

	// A leftover that something outside it uses is not dropped (CASCADE
	// would take that along): the restore says so and changes nothing.
	used := harness.NewDatabase(t)
	used.Exec(t, `CREATE SCHEMA kubectl_assisted_staging_0123456789ab_1;
		COMMENT ON SCHEMA kubectl_assisted_staging_0123456789ab_1 IS 'kubectl-assisted restore staging: left by a killed restore';
		CREATE TABLE kubectl_assisted_staging_0123456789ab_1.hosts (id text);
		CREATE VIEW public.users_view AS SELECT id FROM kubectl_assisted_staging_0123456789ab_1.hosts`)
	before := state(t, used.URL)
	_, err := pg.Restore(ctxFor(t), used.URL, bytes.NewReader(stream), pg.RestoreOptions{Replace: true})
	if err == nil || !strings.Contains(err.Error(), "users_view") {
		t.Fatalf("restore next to a leftover staging schema a view uses: %v, want a refusal naming the view", err)
	}
	assertSameText(t, "target with a used leftover", before, state(t, used.URL))

	mine := harness.NewDatabase(t)
	mine.Exec(t, `CREATE SCHEMA kubectl_assisted_staging_mine; CREATE TABLE kubectl_assisted_staging_mine.t (a int)`)
	if err := pg.CheckTarget(ctxFor(t), mine.URL); !errors.Is(err, pg.ErrTargetNotEmpty) {
		t.Fatalf("CheckTarget with a user's schema named like ours: %v, want ErrTargetNotEmpty", err)
	}
	if _, err := pg.Restore(ctxFor(t), mine.URL, bytes.NewReader(stream), pg.RestoreOptions{}); !errors.Is(err, pg.ErrTargetNotEmpty) {
		t.Fatalf("restore next to a user's schema named like ours: %v, want ErrTargetNotEmpty", err)
	}
	if got := stagingSchemas(t, mine.URL); len(got) != 1 || got[0] != "kubectl_assisted_staging_mine" {
		t.Fatalf("the user's schema was touched: %v", got)
	}
}

// TestStagedRestoreFallsBack: streams that cannot be staged restore in one
// transaction, correctly: an older format (no early post-data), an extension,
// a regclass column (its values name relations, resolved while loading).
func TestStagedRestoreFallsBack(t *testing.T) {
	old := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, old.URL, pg.DumpOptions{})
	as11 := rewriteStream(t, stream, func(name string, body []byte) []byte {
		switch name {
		case "header.json":
			return bytes.Replace(body, []byte(`"version": "1.2"`), []byte(`"version": "1.1"`), 1)
		case "pre-data.json":
			var d map[string]json.RawMessage
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatal(err)
			}
			if d["postData"] == nil {
				t.Fatal("the dump wrote no postData into pre-data.json")
			}
			delete(d, "postData")
			b, _ := json.Marshal(d)
			return b
		}
		return body
	})
	ext := harness.NewDatabase(t)
	ext.Exec(t, `CREATE EXTENSION citext WITH SCHEMA public; CREATE TABLE public.t (id integer PRIMARY KEY, name public.citext);
		INSERT INTO public.t VALUES (1, 'Mixed Case')`)
	reg := harness.NewDatabase(t)
	reg.Exec(t, `CREATE TABLE public.t (id integer PRIMARY KEY, rel regclass); INSERT INTO public.t VALUES (1, 'public.t'), (2, 'pg_catalog.pg_class')`)
	for _, c := range []struct {
		name   string
		src    *harness.Database
		stream []byte
	}{
		{"format 1.1", old, as11},
		{"extension", ext, nil},
		{"regclass column", reg, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := c.stream
			if stream == nil {
				stream, _ = dump(t, c.src.URL, pg.DumpOptions{})
			}
			dst := harness.NewDatabase(t)
			probe, staged := stagedProbe(t, dst.URL)
			restore(t, dst.URL, stream, pg.RestoreOptions{BeforeCommit: probe})
			if staged() {
				t.Fatal("the restore staged a stream it cannot stage")
			}
			assertSameSnapshot(t, "restored target", snapshot(t, c.src.URL), snapshot(t, dst.URL))
		})
	}
}

// TestStagedStreamCopies: a 1.2 stream whose post-data.json departs from the
// copy in pre-data.json is refused before the final commit, the target as
// it was; an unsafe statement in the copy is refused before connecting.
func TestStagedStreamCopies(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	changed := rewriteStream(t, stream, func(name string, body []byte) []byte {
		if name != "post-data.json" {
			return body
		}
		return bytes.Replace(body, []byte("USING btree (deleted_at)"), []byte("USING hash (deleted_at)"), 1)
	})
	if bytes.Equal(changed, stream) {
		t.Fatal("the edit changed nothing")
	}
	unsafe := rewriteStream(t, stream, func(name string, body []byte) []byte {
		if name != "pre-data.json" {
			return body
		}
		return bytes.Replace(body, []byte(`"postData": [`), []byte(`"postData": [{"kind": "INDEX", "schema": "public", "name": "x", "sql": "COPY (SELECT 1) TO PROGRAM 'true'"},`), 1)
	})
	dst := harness.NewDatabase(t)
	before := state(t, dst.URL)
	if _, err := pg.Verify(ctxFor(t), bytes.NewReader(changed)); !errors.Is(err, pg.ErrCorruptStream) {
		t.Errorf("Verify of differing copies: %v, want ErrCorruptStream", err)
	}
	if _, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(changed), pg.RestoreOptions{}); !errors.Is(err, pg.ErrCorruptStream) {
		t.Errorf("Restore of differing copies: %v, want ErrCorruptStream", err)
	}
	if _, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(unsafe), pg.RestoreOptions{}); !errors.Is(err, pg.ErrUnsafeSQL) {
		t.Errorf("Restore of an unsafe early copy: %v, want ErrUnsafeSQL", err)
	}
	assertSameText(t, "target", before, state(t, dst.URL))
}

// stagedEdgeSQL is a schema every major from 12 takes, with what a staged
// restore has to move: a second schema with a comment, an enum, a domain, a
// range type (and its constructors), a sequence not owned by a table, an
// identity column, an expression index, a foreign key, comments.
const stagedEdgeSQL = `
CREATE SCHEMA "Other Schema";
COMMENT ON SCHEMA "Other Schema" IS 'staged elsewhere';
CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN "Other Schema".posint AS integer CHECK (VALUE > 0);
CREATE TYPE public.fr AS RANGE (subtype = float8, subtype_diff = float8mi);
CREATE SEQUENCE "Other Schema"."Odd Seq" START 5;
CREATE TABLE "Other Schema".t (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, m public.mood, p "Other Schema".posint,
	r public.fr, s bigint DEFAULT nextval('"Other Schema"."Odd Seq"'::regclass), name text);
COMMENT ON TABLE "Other Schema".t IS 'a table';
CREATE INDEX t_lower ON "Other Schema".t (lower(name));
CREATE TABLE public.parent (id integer PRIMARY KEY, note text);
CREATE TABLE public.child (id serial PRIMARY KEY, pid integer REFERENCES public.parent (id), at timestamptz DEFAULT now());
INSERT INTO "Other Schema".t (m, p, r, name) SELECT 'ok', i, numrange(i, i + 1)::text::public.fr, 'Name ' || i FROM generate_series(1, 500) i;
INSERT INTO public.parent SELECT i, 'p' || i FROM generate_series(1, 50) i;
INSERT INTO public.child (pid) SELECT 1 + i % 50 FROM generate_series(1, 2000) i;
SELECT nextval('"Other Schema"."Odd Seq"');`

// TestStagedRestoreEveryMajor runs the staged restore on every PostgreSQL
// major from 12 to 17: the same catalog and rows as the one-transaction
// restore and the source, and a kill once the indexes are built followed by
// a rerun gives the same again, no staging schema left.
func TestStagedRestoreEveryMajor(t *testing.T) {
	for _, major := range []int{12, 13, 14, 15, 16, 17} {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			t.Parallel()
			srv := harness.StartPostgresMajor(t, major)
			src := srv.NewDatabase(t)
			assisted.LoadSchema(t, src.URL)
			if err := assisted.Generate(context.Background(), src.URL, assisted.Small); err != nil {
				t.Fatal(err)
			}
			src.Exec(t, stagedEdgeSQL)
			stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 64 << 10})
			want := snapshot(t, src.URL)

			staged := srv.NewDatabase(t)
			probe, wasStaged := stagedProbe(t, staged.URL)
			sum := restore(t, staged.URL, stream, pg.RestoreOptions{BeforeCommit: probe})
			if !wasStaged() || !sum.Analyzed {
				t.Fatalf("PostgreSQL %d: staged %v, analyzed %v; want both", major, wasStaged(), sum.Analyzed)
			}
			assertSameSnapshot(t, fmt.Sprintf("PostgreSQL %d: staged restore vs source", major), want, snapshot(t, staged.URL))
			one := srv.NewDatabase(t)
			restore(t, one.URL, stream, pg.RestoreOptions{SingleTransaction: true})
			assertSameSnapshot(t, fmt.Sprintf("PostgreSQL %d: one-transaction restore vs source", major), want, snapshot(t, one.URL))
			if st, si := statistics(t, staged); st == 0 || si == 0 {
				t.Fatalf("PostgreSQL %d: statistics on %d tables and %d indexed expressions after the staged restore", major, st, si)
			}

			killed := srv.NewDatabase(t)
			before := snapshot(t, killed.URL)
			killRestoreAt(t, killed.URL, stream, "analyze", false)
			if len(stagingSchemas(t, killed.URL)) == 0 {
				t.Fatalf("PostgreSQL %d: the killed restore left no staging schema", major)
			}
			assertSameSnapshot(t, fmt.Sprintf("PostgreSQL %d: target after the kill", major), before, snapshot(t, killed.URL))
			restore(t, killed.URL, stream, pg.RestoreOptions{})
			assertSameSnapshot(t, fmt.Sprintf("PostgreSQL %d: rerun vs source", major), want, snapshot(t, killed.URL))
			if left := stagingSchemas(t, killed.URL); len(left) > 0 {
				t.Fatalf("PostgreSQL %d: the rerun left %v", major, left)
			}
		})
	}
}

// TestDumpFormats: the rows of a table whose columns are all of built-in
// types go in COPY binary format, those of a table with an enum, a domain or
// a range in text (bundle/pg/copybinary.go); both restore to the source's
// rows on the one-transaction and the staged paths, and a dump told to keep
// text (TextCopy) writes text only.
func TestDumpFormats(t *testing.T) {
	src := harness.NewDatabase(t)
	src.Exec(t, stagedEdgeSQL+`;
CREATE TABLE public.everything (b bool, by bytea, c "char", n name, i8 int8, i2 int2, i4 int4, t text, o oid, j json,
	ci cidr, f4 float4, f8 float8, m8 macaddr8, m macaddr, ip inet, bp char(3), vc varchar(5), d date, tm time, ts timestamp,
	tz timestamptz, iv interval, tt timetz, nu numeric(10,2), u uuid, jb jsonb, ta text[], ia int4[][], nn numeric);
INSERT INTO public.everything VALUES (true, '\x00ff', 'x', 'nm', -9223372036854775808, -32768, 2147483647, E'tab\there\nnl \\ bs', 4000000000,
	'{"a": [1, 2.50]}', '10.0.0.0/8', 'NaN', '-Infinity', '08:00:2b:01:02:03:04:05', '08:00:2b:01:02:03', '2001:db8::1/64', 'ab', 'héllo',
	'infinity', '24:00:00', '4713-01-01 00:00:00 BC', '294276-12-31 23:59:59.999999+00', '-178000000 years 1 mon -2 days 03:04:05.123456',
	'23:59:59.999999-15:59', '-12345678.99', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"b": {"c": null}}', '{"x", NULL, "\"q\""}',
	'{{1, 2}, {3, NULL}}', 'NaN'),
	(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL, NULL, NULL, '{}', '{}', '1e-20')`)
	formats := func(stream []byte) map[string]string {
		var h struct {
			Version string `json:"version"`
			Tables  []struct {
				Schema, Name, Format string
			} `json:"tables"`
		}
		rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name == "header.json" {
				if err := json.Unmarshal(body, &h); err != nil {
					t.Fatal(err)
				}
			}
			return body
		})
		out := map[string]string{"version": h.Version}
		for _, tb := range h.Tables {
			out[tb.Schema+"."+tb.Name] = tb.Format
		}
		return out
	}
	want := snapshot(t, src.URL)
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 1000})
	got := formats(stream)
	for table, format := range map[string]string{"public.everything": "binary", "public.parent": "binary", "public.child": "binary", "Other Schema.t": ""} {
		if got[table] != format {
			t.Errorf("table %s is dumped in format %q, want %q (%v)", table, got[table], format, got)
		}
	}
	text, _ := dump(t, src.URL, pg.DumpOptions{TextCopy: true})
	for table, format := range formats(text) {
		if table != "version" && format != "" {
			t.Errorf("TextCopy: table %s is dumped in format %q", table, format)
		}
	}
	for name, s := range map[string][]byte{"mixed": stream, "text": text} {
		for _, single := range []bool{false, true} {
			dst := harness.NewDatabase(t)
			restore(t, dst.URL, s, pg.RestoreOptions{SingleTransaction: single, Readback: pg.ReadbackAlways})
			assertSameSnapshot(t, fmt.Sprintf("%s stream, one transaction %v", name, single), want, snapshot(t, dst.URL))
		}
	}
}
