package pgtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// tiny is what a target holds before a failed restore, so that "left as it
// was" is checked against real content.
var tiny = assisted.Scale{Clusters: 2, Hosts: 3, Events: 10, InventoryBytes: 3000}

// state is everything pg_dump sees in a database.
func state(t testing.TB, url string) string {
	t.Helper()
	return pgDump(t, url, "--schema-only") + "\n-- data --\n" + sortedData(t, url)
}

func seededTarget(t testing.TB, db *harness.Database) string {
	t.Helper()
	assisted.LoadSchema(t, db.URL)
	if err := assisted.Generate(context.Background(), db.URL, tiny); err != nil {
		t.Fatal(err)
	}
	db.Exec(t, "CREATE TABLE public.extra (note text); INSERT INTO public.extra VALUES ('kept unless replaced')")
	return state(t, db.URL)
}

func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	before := seededTarget(t, dst)

	_, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(stream), pg.RestoreOptions{})
	if !errors.Is(err, pg.ErrTargetNotEmpty) {
		t.Fatalf("restore into a non-empty database: err = %v, want ErrTargetNotEmpty", err)
	}
	var tne *pg.TargetNotEmptyError
	if !errors.As(err, &tne) || len(tne.Objects) == 0 {
		t.Fatalf("error %v does not list the objects", err)
	}
	for _, want := range []string{"table public.api_vips", "--replace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	assertSameText(t, "target", before, state(t, dst.URL))
}

func TestRestoreReplace(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	seededTarget(t, dst)
	restore(t, dst.URL, stream, pg.RestoreOptions{Replace: true})
	assertSameDatabase(t, src.URL, dst.URL)
}

// TestRestoreBrokenStreams feeds truncated and tampered streams to a restore
// with Replace into a seeded target: each must fail with the right error and
// leave the target exactly as it was.
func TestRestoreBrokenStreams(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 256 << 10})
	dst := harness.NewDatabase(t)
	before := seededTarget(t, dst)

	names, starts, sizes := memberOffsets(t, stream)
	type tc struct {
		name    string
		stream  []byte
		wantErr error
	}
	var cases []tc
	for i, n := range names {
		// Cut inside each member, and right after it.
		mid := starts[i] + sizes[i]/2
		cases = append(cases, tc{"cut inside " + n, stream[:mid], pg.ErrCorruptStream})
		end := starts[i] + sizes[i]
		if n != "summary.json" {
			cases = append(cases, tc{"cut after " + n, stream[:(end+511)/512*512], pg.ErrCorruptStream})
		}
	}
	cases = append(cases,
		tc{"wrong checksum in summary", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name != "summary.json" {
				return body
			}
			var s map[string]any
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatal(err)
			}
			s["tables"].([]any)[3].(map[string]any)["checksum"] = "xxh3-128:" + strings.Repeat("0", 32)
			b, _ := json.Marshal(s)
			return b
		}), pg.ErrChecksumMismatch},
		tc{"value changed in data", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if !strings.HasPrefix(name, "data/") {
				return body
			}
			return bytes.Replace(body, []byte("cluster to installing"), []byte("cluster to INSTALLING"), 1)
		}), pg.ErrChecksumMismatch},
		tc{"row dropped from data", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name != "data/0001/000000.copy" {
				return body
			}
			return body[bytes.IndexByte(body, '\n')+1:]
		}), pg.ErrChecksumMismatch},
		tc{"data member missing", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name == "data/0004/000001.copy" {
				return nil
			}
			return body
		}), pg.ErrCorruptStream},
		tc{"newer major format", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name != "header.json" {
				return body
			}
			return bytes.Replace(body, fmt.Appendf(nil, `"version": "%d.`, pg.FormatMajor), fmt.Appendf(nil, `"version": "%d.`, pg.FormatMajor+1), 1)
		}), pg.ErrUnsupportedFormat},
		// Statements a dump never writes: refused before they run (pre-data
		// before connecting, post-data inside the transaction, before any
		// of it runs), the seeded target untouched.
		tc{"role in pre-data", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name != "pre-data.json" {
				return body
			}
			return bytes.Replace(body, []byte(`"sql": "CREATE SCHEMA \"public\""`), []byte(`"sql": "CREATE SCHEMA \"public\"; CREATE ROLE kat_never SUPERUSER"`), 1)
		}), pg.ErrUnsafeSQL},
		tc{"copy to program in post-data", rewriteStream(t, stream, func(name string, body []byte) []byte {
			if name != "post-data.json" {
				return body
			}
			return bytes.Replace(body, []byte(`"objects": [`), []byte(`"objects": [{"kind": "INDEX", "schema": "public", "name": "x", "sql": "COPY (SELECT 1) TO PROGRAM 'true'"},`), 1)
		}), pg.ErrUnsafeSQL},
		tc{"not a dump", []byte("hello, this is not a tar stream at all"), pg.ErrCorruptStream},
		tc{"empty", nil, pg.ErrCorruptStream},
	)
	for _, c := range cases {
		_, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(c.stream), pg.RestoreOptions{Replace: true})
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.wantErr)
		}
	}
	assertSameText(t, "target", before, state(t, dst.URL))
	if len(cases) < 20 {
		t.Fatalf("only %d cases: the stream has too few members", len(cases))
	}
}

// interruptedRestore runs a Replace restore that pauses in the middle of the
// table data, calls interrupt, then lets the stream go on; it returns the
// restore's error.
func interruptedRestore(t *testing.T, ctx context.Context, url string, stream []byte, interrupt func()) error {
	t.Helper()
	pr := newPausingReader(stream, dataMiddle(t, stream))
	errc := make(chan error, 1)
	go func() {
		_, err := pg.Restore(ctx, url, pr, pg.RestoreOptions{Replace: true})
		errc <- err
	}()
	select {
	case <-pr.paused:
	case err := <-errc:
		t.Fatalf("restore ended before the middle of the data: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("restore never reached the middle of the data")
	}
	interrupt()
	close(pr.resume)
	select {
	case err := <-errc:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatal("restore did not end after the interruption")
		return nil
	}
}

func TestRestoreServerKilledMidCopy(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	srv := harness.StartPostgres(t)
	dst := srv.NewDatabase(t)
	before := seededTarget(t, dst)
	// Crash recovery replays a sequence's WAL record, which PostgreSQL logs
	// 32 values ahead: without a checkpoint, events_id_seq would jump on
	// restart whatever the restore did.
	dst.Exec(t, "CHECKPOINT")

	err := interruptedRestore(t, ctxFor(t), dst.URL, stream, srv.Kill)
	if err == nil {
		t.Fatal("restore succeeded although the server was killed")
	}
	srv.Restart(t)
	// The server died mid-load: what the restore staged stays, in staging
	// schemas of its own, beside the untouched target...
	if left := stagingSchemas(t, dst.URL); len(left) == 0 {
		t.Error("no staging schema left by the killed restore: it did not stage, the test proves less than it claims")
	}
	assertSameText(t, "target", before, stateOutsideStaging(t, dst.URL))
	// ...and the next restore drops it and restores.
	restore(t, dst.URL, stream, pg.RestoreOptions{Replace: true})
	assertSameDatabase(t, src.URL, dst.URL)
}

func TestRestoreBackendTerminatedMidCopy(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	before := seededTarget(t, dst)
	admin := dst.Connect(t)

	err := interruptedRestore(t, ctxFor(t), dst.URL+"&application_name=kat-restore-under-test", stream, func() {
		// A connection that loads rows (the others build indexes), once
		// its COPY runs: the stream is read ahead of the loads.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n int
			err := admin.QueryRow(context.Background(), `SELECT count(pg_catalog.pg_terminate_backend(pid)) FROM pg_catalog.pg_stat_activity
				WHERE application_name = 'kat-restore-under-test' AND datname = $1 AND state = 'active' AND query LIKE 'COPY % FROM STDIN%'`, dst.Name).Scan(&n)
			if err != nil || (n == 0 && time.Now().After(deadline)) {
				t.Errorf("terminate the restore's loading backend: %d terminated, %v", n, err)
			}
			if err != nil || n > 0 || time.Now().After(deadline) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if err == nil {
		t.Fatal("restore succeeded although its connection was terminated")
	}
	assertSameText(t, "target", before, state(t, dst.URL))
}

func TestRestoreCancelledMidCopy(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	before := seededTarget(t, dst)

	ctx, cancel := context.WithCancel(ctxFor(t))
	err := interruptedRestore(t, ctx, dst.URL, stream, cancel)
	if err == nil {
		t.Fatal("restore succeeded although its context was cancelled")
	}
	assertSameText(t, "target", before, state(t, dst.URL))
}

func TestRestoreBeforeCommit(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})

	t.Run("writes land with the restore", func(t *testing.T) {
		dst := harness.NewDatabase(t)
		restore(t, dst.URL, stream, pg.RestoreOptions{BeforeCommit: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE public.clusters SET kube_key_namespace = 'restored-ns'")
			return err
		}})
		var n int
		if err := dst.Connect(t).QueryRow(context.Background(), "SELECT count(*) FROM public.clusters WHERE kube_key_namespace = 'restored-ns'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != assisted.Small.Clusters {
			t.Fatalf("%d clusters carry the namespace written before commit, want %d", n, assisted.Small.Clusters)
		}
	})
	t.Run("an error rolls everything back", func(t *testing.T) {
		dst := harness.NewDatabase(t)
		before := state(t, dst.URL)
		boom := errors.New("kube keys could not be written")
		_, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(stream), pg.RestoreOptions{BeforeCommit: func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE public.clusters SET kube_key_namespace = 'x'"); err != nil {
				return err
			}
			return boom
		}})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the hook's error", err)
		}
		assertSameText(t, "target", before, state(t, dst.URL))
	})
}

// TestReadbackCatchesChangedValues: a target that changes values on load (an
// event trigger adds a row trigger to every new table) passes the stream
// checks, since the bytes sent are right, but not the readback.
func TestReadbackCatchesChangedValues(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	tamper := func(t *testing.T) *harness.Database {
		db := harness.NewDatabase(t)
		// Event triggers and pg_catalog functions are outside every user
		// schema, so the target still counts as empty.
		db.Exec(t, `
CREATE FUNCTION pg_catalog.kat_tamper_row() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN NEW.id := NEW.id || '-changed'; RETURN NEW; END $$;
CREATE FUNCTION pg_catalog.kat_tamper_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM pg_catalog.pg_event_trigger_ddl_commands() WHERE object_identity LIKE '%.migrations' LOOP
    EXECUTE 'CREATE TRIGGER kat_tamper BEFORE INSERT ON ' || r.object_identity || ' FOR EACH ROW EXECUTE FUNCTION pg_catalog.kat_tamper_row()';
  END LOOP;
END $$;
CREATE EVENT TRIGGER kat_tamper ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION pg_catalog.kat_tamper_ddl();`)
		return db
	}

	dst := tamper(t)
	before := state(t, dst.URL)
	_, err := pg.Restore(ctxFor(t), dst.URL, bytes.NewReader(stream), pg.RestoreOptions{Readback: pg.ReadbackAlways})
	if !errors.Is(err, pg.ErrChecksumMismatch) || !strings.Contains(err.Error(), "public.migrations") {
		t.Fatalf("err = %v, want a checksum mismatch on public.migrations", err)
	}
	assertSameText(t, "target", before, state(t, dst.URL))

	// Without the readback the changed values go unnoticed: the check above
	// is what catches them.
	other := tamper(t)
	restore(t, other.URL, stream, pg.RestoreOptions{Readback: pg.ReadbackNever})
	var changed int
	if err := other.Connect(t).QueryRow(context.Background(), "SELECT count(*) FROM public.migrations WHERE id LIKE '%-changed'").Scan(&changed); err != nil {
		t.Fatal(err)
	}
	if changed == 0 {
		t.Fatal("the tampering trigger did not fire: the test proves nothing")
	}
}

// slowReader hands out its stream a little at a time, slowly: whatever the
// restore's loaders do with the first tables happens before the reader gets
// to the stream's end.
type slowReader struct {
	r     *bytes.Reader
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.pause)
	return s.r.Read(p[:min(len(p), 16<<10)])
}

// TestRestoreRefusedDataReportsTheDamage: a data member cut at its first
// newline breaks a COPY binary header, which the server refuses at once
// (SQLSTATE 22P04) while the stream is still being read. The restore reads
// and hashes the rest of the stream, loading nothing more, and reports what
// is wrong with the stream (a checksum mismatch) rather than the server's
// complaint about the bytes; the target is left as it was. Slowing the
// stream makes sure the server's refusal comes first (without the reader
// going on, TestRestoreBrokenStreams' "row dropped from data" case reported
// one or the other, as the race went).
func TestRestoreRefusedDataReportsTheDamage(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 256 << 10})
	broken := rewriteStream(t, stream, func(name string, body []byte) []byte {
		if name != "data/0001/000000.copy" {
			return body
		}
		if !bytes.HasPrefix(body, []byte("PGCOPY\n")) {
			t.Fatalf("table 1's data is not in COPY binary format (%q...): the case needs one", body[:min(len(body), 8)])
		}
		return body[bytes.IndexByte(body, '\n')+1:]
	})
	// Both ways of restoring: in stages (stageload.go) and in one
	// transaction (restore.go), each with its own reader of the stream.
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single-transaction=%t", single), func(t *testing.T) {
			dst := harness.NewDatabase(t)
			before := seededTarget(t, dst)
			_, err := pg.Restore(ctxFor(t), dst.URL, &slowReader{r: bytes.NewReader(broken), pause: 2 * time.Millisecond},
				pg.RestoreOptions{Replace: true, SingleTransaction: single})
			if !errors.Is(err, pg.ErrChecksumMismatch) {
				t.Fatalf("err = %v, want %v", err, pg.ErrChecksumMismatch)
			}
			assertSameText(t, "target", before, state(t, dst.URL))
		})
	}
}

// TestRestoreRefusedSoundDataReportsTheServer: a sound stream whose data the
// server refuses (a UTF-8 dump holding a character that the target
// database's LATIN1 encoding has no equivalent for, SQLSTATE 22P05) is
// reported as the server's refusal, after the restore read the rest of the
// stream and found it sound; the target is left as it was.
func TestRestoreRefusedSoundDataReportsTheServer(t *testing.T) {
	src := assisted.NewDatabase(t, assisted.Small)
	src.Exec(t, "UPDATE public.clusters SET name = name || ' 日本'")
	stream, _ := dump(t, src.URL, pg.DumpOptions{ChunkSize: 256 << 10})
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single-transaction=%t", single), func(t *testing.T) {
			dst := harness.NewDatabaseEncoded(t, "LATIN1")
			before := seededTarget(t, dst)
			_, err := pg.Restore(ctxFor(t), dst.URL, &slowReader{r: bytes.NewReader(stream), pause: time.Millisecond},
				pg.RestoreOptions{Replace: true, SingleTransaction: single})
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22P05" {
				t.Fatalf("err = %v, want the server's SQLSTATE 22P05", err)
			}
			if errors.Is(err, pg.ErrChecksumMismatch) || errors.Is(err, pg.ErrCorruptStream) {
				t.Fatalf("err = %v: a sound stream reported as damaged", err)
			}
			if !strings.Contains(err.Error(), "clusters") {
				t.Fatalf("err = %v, want it to name the table", err)
			}
			assertSameText(t, "target", before, state(t, dst.URL))
		})
	}
}
