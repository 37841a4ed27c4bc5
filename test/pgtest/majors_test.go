package pgtest

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/pgsnap"
)

// TestOlderTargetMajor dumps from the machine's PostgreSQL (15) and checks the
// engine against a PostgreSQL 13 server: a schema 13 accepts (the column
// option n_distinct, beside Debian's internal pg_attver, included) is tried by
// CheckTargetVersion, reported as older, and restores identical; a schema 13
// cannot take (an int4multirange column, new in 14) is refused by
// CheckTargetVersion and by Restore itself with an *OlderTargetError, the
// target left empty. A target of the source's major is not read past the
// stream's header.
func TestOlderTargetMajor(t *testing.T) {
	old := harness.StartPostgresMajor(t, 13)
	ctx := ctxFor(t)

	accepted := harness.NewDatabase(t)
	accepted.Exec(t, `CREATE TABLE public.hosts (id text PRIMARY KEY, ip inet, net cidr, tags text[], seen timestamp with time zone DEFAULT now());
		ALTER TABLE public.hosts ALTER COLUMN tags SET (n_distinct = 5);
		COMMENT ON COLUMN public.hosts.ip IS 'address';
		INSERT INTO public.hosts VALUES ('a', '10.0.0.1', '10.0.0.0/8', '{x,"y z"}', '2024-01-01 00:00:00+00'), ('b', NULL, NULL, '{}', NULL);`)
	stream, _ := dump(t, accepted.URL, pg.DumpOptions{})
	if bytes.Contains(stream, []byte("pg_attver")) {
		t.Fatal("the dump carries the server-internal column option pg_attver")
	}

	dst := old.NewDatabase(t)
	vc, err := pg.CheckTargetVersion(ctx, dst.URL, bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("CheckTargetVersion on PostgreSQL 13: %v", err)
	}
	if !vc.Older || vc.SourceVersionNum/10000 != 15 || vc.TargetVersionNum/10000 != 13 {
		t.Fatalf("CheckTargetVersion = %+v, want source 15, target 13, older", vc)
	}
	restore(t, dst.URL, stream, pg.RestoreOptions{})
	want, err := pgsnap.Take(ctx, accepted.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgsnap.Take(ctx, dst.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(want.Catalog, "column public.hosts.tags #4: text[] options n_distinct=5") {
		t.Fatalf("source snapshot lacks the n_distinct option:\n%s", strings.Join(want.Catalog, "\n"))
	}
	if d := pgsnap.Diff(want, got, 20); len(d) > 0 {
		t.Fatalf("15 → 13 differs:\n%s", strings.Join(d, "\n"))
	}

	refused := harness.NewDatabase(t)
	refused.Exec(t, `CREATE TABLE public.bookings (id bigint PRIMARY KEY, slots int4multirange NOT NULL);
		INSERT INTO public.bookings VALUES (1, '{[1,3), [7,9)}');`)
	stream, _ = dump(t, refused.URL, pg.DumpOptions{})
	dst = old.NewDatabase(t)
	_, err = pg.CheckTargetVersion(ctx, dst.URL, bytes.NewReader(stream))
	var ote *pg.OlderTargetError
	if !errors.As(err, &ote) || !errors.Is(err, pg.ErrOlderTarget) {
		t.Fatalf("CheckTargetVersion of an int4multirange schema on PostgreSQL 13: %v, want *OlderTargetError", err)
	}
	for _, want := range []string{"PostgreSQL 13.", "int4multirange", "restore into PostgreSQL 15 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	_, err = pg.Restore(ctx, dst.URL, bytes.NewReader(stream), pg.RestoreOptions{})
	if !errors.Is(err, pg.ErrOlderTarget) {
		t.Fatalf("Restore of an int4multirange schema on PostgreSQL 13: %v, want ErrOlderTarget", err)
	}
	after, err := pgsnap.Take(ctx, dst.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range after.Catalog {
		if strings.HasPrefix(l, "relation ") || strings.HasPrefix(l, "type ") {
			t.Fatalf("refused target holds %s", l)
		}
	}

	// Same major: the header decides, nothing after it is read.
	tr := tar.NewReader(bytes.NewReader(stream))
	first, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := 512 + (first.Size+511)/512*512
	same := harness.NewDatabase(t)
	vc, err = pg.CheckTargetVersion(ctx, same.URL, io.MultiReader(bytes.NewReader(stream[:headerEnd]), failingReader{}))
	if err != nil || vc.Older {
		t.Fatalf("CheckTargetVersion on the source's own major: %+v, %v; want not older, no further read", vc, err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read past the header") }

func hasLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
