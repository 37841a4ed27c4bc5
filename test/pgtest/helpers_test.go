package pgtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// pgDump runs the machine's pg_dump against url and returns its output without
// the header comments that name the versions and without the \restrict lines,
// whose key is random in every dump.
func pgDump(t testing.TB, url string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		harness.Unavailable(t, "pg_dump", err)
	}
	cmd := exec.Command(bin, append([]string{"--no-sync", "-d", url}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump %v: %v\n%s", args, err, stderr.String())
	}
	var kept []string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "-- Dumped from database version"),
			strings.HasPrefix(line, "-- Dumped by pg_dump version"),
			strings.HasPrefix(line, `\restrict `), strings.HasPrefix(line, `\unrestrict `):
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n")
}

// stagingSchemas lists the staging schemas of restores in the database.
func stagingSchemas(t testing.TB, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT nspname::text FROM pg_catalog.pg_namespace WHERE nspname LIKE 'kubectl\_assisted\_staging\_%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// stateOutsideStaging is state without the staging schemas a killed restore
// leaves (which the next restore drops).
func stateOutsideStaging(t testing.TB, url string) string {
	t.Helper()
	lines := strings.Split(pgDump(t, url, "--data-only", "--exclude-schema=kubectl_assisted_staging_*"), "\n")
	sort.Strings(lines)
	return pgDump(t, url, "--schema-only", "--exclude-schema=kubectl_assisted_staging_*") + "\n-- data --\n" + strings.Join(lines, "\n")
}

// sortedData is pg_dump --data-only with its lines sorted, so that row order
// (which pg_dump does not fix) does not matter.
func sortedData(t testing.TB, url string) string {
	t.Helper()
	lines := strings.Split(pgDump(t, url, "--data-only"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// assertSameDatabase compares pg_dump --schema-only and sorted pg_dump
// --data-only of two databases.
func assertSameDatabase(t testing.TB, srcURL, dstURL string) {
	t.Helper()
	assertSameText(t, "schema", pgDump(t, srcURL, "--schema-only"), pgDump(t, dstURL, "--schema-only"))
	assertSameText(t, "data", sortedData(t, srcURL), sortedData(t, dstURL))
}

func assertSameText(t testing.TB, what, want, got string) {
	t.Helper()
	if want == got {
		return
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, what+".source"), filepath.Join(dir, what+".restored")
	_ = os.WriteFile(a, []byte(want), 0o600)
	_ = os.WriteFile(b, []byte(got), 0o600)
	diff, _ := exec.Command("diff", "-u", a, b).CombinedOutput()
	if len(diff) > 20000 {
		diff = append(diff[:20000], "\n...(diff cut)"...)
	}
	t.Fatalf("%s of the restored database differs from the source:\n%s", what, diff)
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dump dumps url into memory.
func dump(t testing.TB, url string, opts pg.DumpOptions) ([]byte, *pg.Summary) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := pg.Dump(ctxFor(t), url, &buf, opts)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	if sum.Bytes != int64(buf.Len()) {
		t.Fatalf("summary says %d bytes, the stream is %d", sum.Bytes, buf.Len())
	}
	return buf.Bytes(), sum
}

// restore restores stream into url and fails the test on error.
func restore(t testing.TB, url string, stream []byte, opts pg.RestoreOptions) *pg.Summary {
	t.Helper()
	sum, err := pg.Restore(ctxFor(t), url, bytes.NewReader(stream), opts)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	return sum
}

func loadEdgeSchema(t testing.TB, db *harness.Database) {
	t.Helper()
	harness.LoadSQLFile(t, db.URL, filepath.Join("testdata", "edge-schema.sql"))
	harness.LoadSQLFile(t, db.URL, filepath.Join("testdata", "edge-data.sql"))
}
