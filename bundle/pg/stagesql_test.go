package pg

import (
	"errors"
	"strings"
	"testing"
)

func testRewriter() *stageRewriter {
	return &stageRewriter{to: map[string]string{"public": "stg_1", "App Data": "stg_2"}}
}

func TestStageRewrite(t *testing.T) {
	w := testRewriter()
	for _, c := range []struct{ in, want string }{
		{`CREATE TABLE "public"."hosts" ("id" text NOT NULL)`, `CREATE TABLE "stg_1"."hosts" ("id" text NOT NULL)`},
		// unquoted names are folded to lower case, as the server folds them
		{`CREATE INDEX hosts_by_cluster ON PUBLIC.hosts USING btree (cluster_id)`, `CREATE INDEX hosts_by_cluster ON "stg_1".hosts USING btree (cluster_id)`},
		{`ALTER TABLE ONLY "public"."events" ALTER COLUMN "id" SET DEFAULT nextval('public.events_id_seq'::regclass)`,
			`ALTER TABLE ONLY "stg_1"."events" ALTER COLUMN "id" SET DEFAULT nextval('"stg_1"."events_id_seq"'::regclass)`},
		{`CREATE TABLE "App Data"."t" ("a" bigint DEFAULT nextval('"App Data"."s"'::pg_catalog.regclass))`,
			`CREATE TABLE "stg_2"."t" ("a" bigint DEFAULT nextval('"stg_2"."s"'::pg_catalog.regclass))`},
		// the second and third parts of a dotted name are never schemas
		{`ALTER SEQUENCE "public"."s" OWNED BY "public"."public"."public"`, `ALTER SEQUENCE "stg_1"."s" OWNED BY "stg_1"."public"."public"`},
		{`COMMENT ON COLUMN "public"."t"."public" IS 'public.t is here'`, `COMMENT ON COLUMN "stg_1"."t"."public" IS 'public.t is here'`},
		// a column named like the schema, strings, comments and dollar quotes stay
		{`CREATE TABLE "public"."t" ("public" text DEFAULT 'public.x', b text DEFAULT $q$public.y$q$) -- public.z`,
			`CREATE TABLE "stg_1"."t" ("public" text DEFAULT 'public.x', b text DEFAULT $q$public.y$q$) -- public.z`},
		{`CREATE TABLE public.t (c text CHECK (c <> E'public.\'x')) /* public.c /* nested */ public.d */`,
			`CREATE TABLE "stg_1".t (c text CHECK (c <> E'public.\'x')) /* public.c /* nested */ public.d */`},
		// types of the stream, casts to them
		{`CREATE TABLE "public"."t" ("s" "public"."status" DEFAULT 'new'::"public"."status", "n" numeric(10,2) DEFAULT 1.5e-3)`,
			`CREATE TABLE "stg_1"."t" ("s" "stg_1"."status" DEFAULT 'new'::"stg_1"."status", "n" numeric(10,2) DEFAULT 1.5e-3)`},
		// other schemas and unqualified regclass constants are left alone
		{`CREATE TABLE "other"."t" ("a" bigint DEFAULT nextval('seq'::regclass))`, `CREATE TABLE "other"."t" ("a" bigint DEFAULT nextval('seq'::regclass))`},
		{`CREATE INDEX i ON public.t USING gin (to_tsvector('english'::regconfig, c))`, `CREATE INDEX i ON "stg_1".t USING gin (to_tsvector('english'::regconfig, c))`},
		{`ALTER TABLE ONLY "public"."a" ADD CONSTRAINT "f" FOREIGN KEY ("b") REFERENCES "public"."b"("id")`,
			`ALTER TABLE ONLY "stg_1"."a" ADD CONSTRAINT "f" FOREIGN KEY ("b") REFERENCES "stg_1"."b"("id")`},
	} {
		got, err := w.rewrite(c.in)
		if err != nil {
			t.Errorf("rewrite(%s): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("rewrite(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestStageRewriteRefuses(t *testing.T) {
	w := testRewriter()
	for _, in := range []string{
		`CREATE TABLE "public"."t" ("r" regclass)`,                                       // a regclass column
		`CREATE TABLE "public"."t" ("a" bigint DEFAULT nextval('public.s'))`,             // nextval of an uncast constant
		`CREATE TABLE "public"."t" ("a" text CHECK (a::regclass IS NOT NULL))`,           // a cast of a column
		`CREATE TABLE "public"."t" ("a" oid DEFAULT 'public.t'::regtype)`,                // another reg* type
		`CREATE TABLE "public"."t" ("a" text DEFAULT U&'\0041')`,                         // Unicode escapes
		`CREATE TABLE "public"."t" ("a" text DEFAULT 'x`,                                 // unterminated
		`CREATE TABLE "public"."t" ("a" bigint DEFAULT nextval('a.public.s'::regclass))`, // three-part name
		`CREATE TABLE "public"."t" ("a" bigint DEFAULT nextval('public'
			'.s'::regclass))`, // a continued constant
	} {
		if got, err := w.rewrite(in); !errors.Is(err, errNotStageable) {
			t.Errorf("rewrite(%s) = %q, %v; want errNotStageable", in, got, err)
		}
	}
	long := `CREATE TABLE public.` + strings.Repeat("x", 64) + ` ()`
	if _, err := w.rewrite(long); !errors.Is(err, errNotStageable) {
		t.Errorf("an unquoted identifier of 64 bytes (truncated by the server) was rewritten: %v", err)
	}
}

func TestPostDataTable(t *testing.T) {
	idx := map[qname]qname{{"public", "i"}: {"public", "t"}}
	for _, c := range []struct {
		sql  string
		want qname
		ok   bool
	}{
		{`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "t_pkey" PRIMARY KEY ("id")`, qname{"public", "t"}, true},
		{`CREATE UNIQUE INDEX "u" ON ONLY "public"."T" USING btree (a)`, qname{"public", "T"}, true},
		{`CREATE INDEX i ON public.t USING btree (lower(name))`, qname{"public", "t"}, true},
		{`COMMENT ON INDEX "public"."i" IS 'x'`, qname{"public", "t"}, true},
		{`COMMENT ON CONSTRAINT "c" ON "public"."t" IS 'x'`, qname{"public", "t"}, true},
		{`COMMENT ON INDEX "public"."unknown" IS 'x'`, qname{}, false},
		{`SELECT pg_catalog.setval('"public"."s"', 1, true)`, qname{}, false},
	} {
		got, ok := postDataTable(c.sql, idx)
		if ok != c.ok || got != c.want {
			t.Errorf("postDataTable(%s) = %v, %v; want %v, %v", c.sql, got, ok, c.want, c.ok)
		}
	}
}

// FuzzStageRewrite: whatever the input, a rewrite either refuses or changes
// only stream-schema identifiers and regclass constants, and is stable.
func FuzzStageRewrite(f *testing.F) {
	for _, s := range []string{
		`CREATE TABLE "public"."hosts" ("id" text NOT NULL DEFAULT 'a''b')`,
		`ALTER TABLE ONLY public.events ALTER COLUMN id SET DEFAULT nextval('public.events_id_seq'::regclass)`,
		`CREATE INDEX x ON "App Data".t USING btree ((a + 1)) WHERE (b <> $$public.c$$)`,
		`COMMENT ON COLUMN public.t.c IS E'\\public.x'`,
	} {
		f.Add(s)
	}
	w := testRewriter()
	f.Fuzz(func(t *testing.T, sql string) {
		out, err := w.rewrite(sql)
		if err != nil {
			if !errors.Is(err, errNotStageable) {
				t.Fatalf("error %v is not errNotStageable", err)
			}
			return
		}
		if err := w.sameTokens(mustLex(t, sql), out); err != nil {
			t.Fatalf("rewrite(%q) = %q: %v", sql, out, err)
		}
		// Staging names are not stream schemas: a second rewrite changes nothing.
		again, err := w.rewrite(out)
		if err != nil || again != out {
			t.Fatalf("rewrite of the rewrite %q = %q, %v", out, again, err)
		}
	})
}

func mustLex(t *testing.T, s string) []sqlToken {
	toks, err := lexSQL(s)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

func TestIndexedExpression(t *testing.T) {
	for _, c := range []struct {
		kind, sql string
		want      bool
	}{
		{"INDEX", `CREATE INDEX i ON public.t USING btree (cluster_id)`, false},
		{"INDEX", `CREATE INDEX i ON public.t USING btree (a, b DESC NULLS LAST) INCLUDE (c) WHERE (d IS NULL)`, false},
		{"INDEX", `CREATE INDEX i ON public.t USING btree (lower(name))`, true},
		{"INDEX", `CREATE INDEX i ON public.t USING btree (((a + b)))`, true},
		{"INDEX", `CREATE INDEX i ON public.t USING gin (c COLLATE "C" text_pattern_ops)`, false},
		{"CONSTRAINT", `ALTER TABLE ONLY public.t ADD CONSTRAINT k PRIMARY KEY (id)`, false},
		{"CONSTRAINT", `ALTER TABLE ONLY public.t ADD CONSTRAINT x EXCLUDE USING gist (r WITH &&)`, true},
	} {
		if got := indexedExpression(c.kind, c.sql); got != c.want {
			t.Errorf("indexedExpression(%s) = %v, want %v", c.sql, got, c.want)
		}
	}
}

// TestStagePlanRecheck: the rewritten statements go through the statement
// checker again; one it refuses (here planted in the plan, as a lexer
// disagreement could make it) makes the stream unfit for staging, and the
// plan of the unedited statements passes.
func TestStagePlanRecheck(t *testing.T) {
	h := &streamHeader{Format: FormatName, Version: "1.2", Schemas: []string{"public"},
		Tables: []streamTable{{Schema: "public", Name: "t", Columns: []string{"a"}}}}
	p := &stagePlan{schemas: h.Schemas, stage: map[string]string{"public": stagingPrefix + "0123456789ab_1"}}
	s := ident(p.stage["public"])
	p.pre = []object{{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE ` + s + `."t" ("a" text DEFAULT 'x'::text NOT NULL)`}}
	p.trial = []object{{Kind: "CONSTRAINT", Schema: "public", Name: "t_pkey", SQL: `ALTER TABLE ONLY ` + s + `."t" ADD CONSTRAINT "t_pkey" PRIMARY KEY (a)`}}
	if err := p.recheck(h); err != nil {
		t.Fatalf("recheck of a plain plan: %v", err)
	}
	for _, bad := range []string{
		`CREATE TABLE ` + s + `."t" ("a" text DEFAULT pg_catalog.pg_read_file('/etc/passwd'))`,
		`CREATE TABLE "public"."t" ("a" text)`,
		`CREATE TABLE ` + s + `."t" ("a" text); CREATE ROLE evil SUPERUSER`,
	} {
		q := *p
		q.pre = []object{{Kind: "TABLE", Schema: "public", Name: "t", SQL: bad}}
		if err := q.recheck(h); !errors.Is(err, errNotStageable) {
			t.Errorf("recheck of %s: %v, want errNotStageable", bad, err)
		}
	}
}
