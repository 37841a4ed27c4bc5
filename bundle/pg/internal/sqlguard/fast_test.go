package sqlguard

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"testing"

	pgparser "github.com/wasilibs/go-pgquery/parser"
)

// grammarTree parses sql with PostgreSQL's grammar (libpg_query) and returns
// its only statement with every "location" field removed, as fastParse
// builds it; ok is false when the grammar does not give exactly one
// statement.
func grammarTree(t testing.TB, sql string) (node, bool) {
	t.Helper()
	out, err := pgparser.ParseToJSON(sql)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.UseNumber()
	var tree struct {
		Stmts []struct {
			Stmt node `json:"stmt"`
		} `json:"stmts"`
	}
	if err := dec.Decode(&tree); err != nil {
		t.Fatalf("decode libpg_query output: %v", err)
	}
	if len(tree.Stmts) != 1 {
		return nil, false
	}
	return stripLocations(tree.Stmts[0].Stmt).(node), true
}

func stripLocations(v any) any {
	switch x := v.(type) {
	case node:
		out := node{}
		for k, e := range x {
			if k != "location" {
				out[k] = stripLocations(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripLocations(e)
		}
		return out
	}
	return v
}

// sameAsGrammar fails the test when fastParse accepts sql with a tree that
// is not the grammar's; it reports whether fastParse accepted it.
func sameAsGrammar(t testing.TB, sql string) bool {
	t.Helper()
	fast, ok := fastParse(sql)
	if !ok {
		return false
	}
	want, ok := grammarTree(t, sql)
	if !ok {
		t.Fatalf("the fast path accepted what PostgreSQL's grammar refuses or reads as several statements:\n%s", sql)
	}
	if !reflect.DeepEqual(fast, want) {
		got, _ := json.Marshal(fast)
		exp, _ := json.Marshal(want)
		t.Fatalf("the fast path's tree differs from PostgreSQL's for\n%s\nfast:    %s\ngrammar: %s", sql, got, exp)
	}
	return true
}

// dumpedStatements are statements as Dump writes them for assisted-service's
// schema (a dump of the release-4.19 schema, ../shared/fixtures) and for
// other shapes GORM and pg_get_*def produce.
var dumpedStatements = []string{
	`CREATE SCHEMA "public"`,
	`CREATE SEQUENCE "public"."events_id_seq" AS bigint START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 NO CYCLE`,
	`CREATE UNLOGGED SEQUENCE "public"."s" AS integer START WITH -5 INCREMENT BY -1 MINVALUE -2147483648 MAXVALUE -1 CACHE 1 CYCLE`,
	`CREATE SEQUENCE "public"."s" AS smallint START WITH 0 INCREMENT BY 1 MINVALUE 0 MAXVALUE 32767 CACHE 20 NO CYCLE`,
	`ALTER SEQUENCE "public"."events_id_seq" OWNED BY "public"."events"."id"`,
	`CREATE TABLE "public"."api_vips" ("cluster_id" text NOT NULL, "ip" inet NOT NULL, "verification" text)`,
	`CREATE TABLE "public"."events" ("id" bigint DEFAULT nextval('public.events_id_seq'::regclass) NOT NULL, "created_at" timestamp with time zone, "message" character varying(4096), "props" text) WITH (autovacuum_vacuum_scale_factor='0.05', autovacuum_analyze_scale_factor='0.025')`,
	`CREATE TABLE "public"."clusters" ("id" text NOT NULL, "load_balancer_type" text DEFAULT 'cluster-managed'::text NOT NULL, "logs_info" character varying(2048), CONSTRAINT "chk_clusters_load_balancer_type" CHECK ((load_balancer_type = ANY (ARRAY['cluster-managed'::text, 'user-managed'::text]))))`,
	`CREATE TABLE "public"."t" ("a" text DEFAULT 'x'::text NOT NULL, "c" timestamp with time zone DEFAULT now(), "d" character varying(255)[], "e" boolean DEFAULT false, "f" numeric(10,2) DEFAULT 1.5, "g" integer DEFAULT 0, "h" text DEFAULT ''::text, "i" boolean DEFAULT true) WITH (fillfactor='90', toast.autovacuum_enabled='false')`,
	`CREATE TABLE "public"."u" ("a" text DEFAULT NULL::text, "b" timestamp without time zone DEFAULT CURRENT_TIMESTAMP, "c" double precision, "d" real, "e" smallint, "f" date, "g" jsonb DEFAULT '{}'::jsonb, "h" character(3), "i" interval, "j" timestamp(3) with time zone, "k" public.myenum, "l" text[] DEFAULT '{}'::text[], "m" uuid, "n" bytea, "o" time without time zone, "p" character varying, "q" time(6) with time zone, "r" numeric, "s" "Mixed Schema"."Label"[])`,
	`CREATE UNLOGGED TABLE "Mixed Schema"."it's ""quoted""" ("Col" text, CONSTRAINT "c" CHECK ((NOT ("Col" = 'x'::text))), CONSTRAINT "d" CHECK ((("Col")::text <> ''::text)), CONSTRAINT "e" CHECK ((("Col" || 'y'::text) = 'z'::text)))`,
	`CREATE TABLE "public"."v" ("a" integer, "b" integer, CONSTRAINT "c" CHECK ((((a IS NOT NULL) AND (b > 0)) OR (a IS NULL))), CONSTRAINT "d" CHECK (((a + b) < (a * 2))), CONSTRAINT "e" CHECK ((a <= ANY (ARRAY[1, 2, 3]))), CONSTRAINT "f" CHECK ((length(('x'::text || a)) > 0)))`,
	`ALTER TABLE ONLY "public"."api_vips" ADD CONSTRAINT "api_vips_pkey" PRIMARY KEY (cluster_id, ip)`,
	`ALTER TABLE ONLY "public"."monitored_operators" ADD CONSTRAINT "monitored_operators_pkey" PRIMARY KEY (cluster_id, name)`,
	`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "u" UNIQUE (a, "B", "select")`,
	`ALTER TABLE "public"."t" ADD CONSTRAINT "c" CHECK (((a IS NOT NULL) AND (b > 0) AND (c IS NULL)))`,
	`ALTER TABLE ONLY "public"."hosts" ADD CONSTRAINT "fk_hosts_cluster" FOREIGN KEY (cluster_id) REFERENCES public.clusters(id) ON DELETE CASCADE`,
	`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk2" FOREIGN KEY (a, b) REFERENCES public.c(x, y) ON UPDATE RESTRICT ON DELETE SET NULL`,
	`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk3" FOREIGN KEY (a) REFERENCES "Mixed Schema"."C"("X") ON UPDATE CASCADE`,
	`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk4" FOREIGN KEY (a) REFERENCES public.c(x) ON UPDATE NO ACTION ON DELETE SET DEFAULT`,
	`CREATE INDEX hosts_by_cluster_id ON public.hosts USING btree (cluster_id)`,
	`CREATE INDEX idx_events_cluster_id ON public.events USING btree (cluster_id)`,
	`CREATE UNIQUE INDEX idx ON public.t USING btree (a, b) WHERE (deleted_at IS NULL)`,
	`CREATE INDEX "Odd Index" ON ONLY "Mixed Schema"."T" USING hash ("Col")`,
	`CREATE INDEX i ON public.t USING gin (data) WHERE (status <> 'x'::text)`,
	`SELECT pg_catalog.setval('"public"."events_id_seq"', 1, false)`,
	`SELECT pg_catalog.setval('"public"."s"', 3000000000, true)`,
	`SELECT pg_catalog.setval('"Mixed Schema"."Odd Seq"', 0, true)`,
	// identity and generated columns, comments and expression indexes, as
	// Dump writes them for the PostgreSQL-majors table (test/e2e/pgmajors_test.go)
	`CREATE TABLE "public"."kat_values" ("id" bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME "public"."kat_values_id_seq" START WITH 100 INCREMENT BY 3 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 NO CYCLE) NOT NULL, "t" text, "vc" character varying(32) DEFAULT ''::character varying NOT NULL, "n" numeric(14,4), "len" integer GENERATED ALWAYS AS (length(t)) STORED, CONSTRAINT "kat_values_n_check" CHECK (((n IS NULL) OR (n > ('-1000000'::integer)::numeric))))`,
	`CREATE TABLE "public"."t" ("a" integer GENERATED ALWAYS AS IDENTITY NOT NULL, "b" smallint GENERATED BY DEFAULT AS IDENTITY (START WITH -1 INCREMENT BY -1 MINVALUE -32768 MAXVALUE -1 CACHE 20 CYCLE) NOT NULL, "c" text GENERATED ALWAYS AS ((a || 'x'::text)) STORED)`,
	`COMMENT ON TABLE "public"."kat_values" IS 'values that print differently when a server gets them wrong'`,
	`COMMENT ON COLUMN "public"."kat_values"."t" IS 'text with ''quotes'''`,
	`COMMENT ON SCHEMA "public" IS 'standard public schema'`,
	`COMMENT ON SEQUENCE "public"."s" IS ''`,
	`COMMENT ON INDEX "public"."i" IS 'é'`,
	`COMMENT ON CONSTRAINT "c" ON "public"."t" IS 'x'`,
	`COMMENT ON TABLE "public"."t" IS NULL`,
	`CREATE INDEX kat_values_partial ON public.kat_values USING btree (lower((vc)::text)) WHERE (b IS TRUE)`,
	`CREATE INDEX i ON public.t USING btree (lower(a))`,
	// the grammar flattens a left operand of the same chain, parentheses or not
	`ALTER TABLE "public"."t" ADD CONSTRAINT "c" CHECK ((((a IS NULL) AND (b > 0)) AND (c IS NULL) AND d))`,
	`ALTER TABLE "public"."t" ADD CONSTRAINT "c" CHECK (((a OR b) OR (c OR d)))`,
	`CREATE UNIQUE INDEX i ON public.t USING btree (a, public.f(b, 1), ((c + 1))) WHERE ((d IS NOT FALSE) AND (e IS NOT TRUE) AND (f IS FALSE))`,
	// extensions, as Dump writes them (dump.go)
	`CREATE EXTENSION IF NOT EXISTS "citext" WITH SCHEMA "public"`,
	`CREATE EXTENSION IF NOT EXISTS "Odd Ext" WITH SCHEMA "Mixed Schema"`,
	// shapes Dump does not write but a hostile stream may, taken so that
	// the checker refuses them without compiling the grammar
	`COMMENT ON ROLE postgres IS 'owned'`,
	`SELECT pg_catalog.set_config('role', 'postgres', false)`,
	`SELECT setval('"public"."s"', 1, true)`,
	`SELECT now()`,
	`CREATE TABLE "public"."t" ("a" text CHECK ((length(a) > 0)), "b" integer NOT NULL CHECK ((b > 0)) DEFAULT 1, "c" text DEFAULT 'x'::text NOT NULL NOT NULL)`,
}

// TestFastParse_SameTreeAsPostgreSQL: every statement of the corpus is
// taken by the fast path, with the tree PostgreSQL's own grammar gives it;
// the statements of the checker's own corpus that the fast path takes give
// the grammar's tree too.
func TestFastParse_SameTreeAsPostgreSQL(t *testing.T) {
	for _, sql := range dumpedStatements {
		if !sameAsGrammar(t, sql) {
			t.Errorf("the fast path leaves a statement Dump writes to the grammar:\n%s", sql)
		}
	}
	taken := 0
	for _, o := range append(append([]Entry{}, goodPre...), goodPost...) {
		if sameAsGrammar(t, o.SQL) {
			taken++
		}
	}
	if taken == 0 {
		t.Error("the fast path took none of the checker's corpus")
	}
}

// TestFastParse_LeavesTheRestToTheGrammar: spellings outside the narrow
// subset are not taken, whatever they mean, so the grammar decides.
func TestFastParse_LeavesTheRestToTheGrammar(t *testing.T) {
	for _, sql := range []string{
		"CREATE SCHEMA \"public\"\n",
		"CREATE SCHEMA \"public\" -- comment",
		`CREATE SCHEMA "public" /* comment */`,
		`CREATE SCHEMA "public";`,
		`CREATE SCHEMA "public"; CREATE ROLE x SUPERUSER`,
		"CREATE\tSCHEMA \"public\"",
		`create schema "public"`,
		`CREATE SCHEMA Public`,
		`CREATE SCHEMA select`,
		`CREATE SCHEMA "` + strings.Repeat("a", 64) + `"`,
		`CREATE SCHEMA ` + strings.Repeat("a", 64),
		`CREATE SCHEMA ""`,
		`CREATE SCHEMA a$b`,
		`CREATE SCHEMA U&"a"`,
		`CREATE SCHEMA "public" AUTHORIZATION postgres`,
		`CREATE TABLE "public"."t" ("a" text DEFAULT E'x\n'::text)`,
		`CREATE TABLE "public"."t" ("a" text DEFAULT 'x\'::text)`,
		`CREATE TABLE "public"."t" ("a" text DEFAULT $$x$$::text)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT -1)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT 007)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT 1e5)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT 0x10)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT 1_000)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT 1abc)`,
		`CREATE TABLE "public"."t" ("a" integer DEFAULT (1 + 2 + 3))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a = 1 = true)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a=-1)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a != 1)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a ~~ 'x'::text)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a = 1 AND b = 2)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK (((a = 1) AND (b = 2) OR (c = 3))))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((NOT a = 1)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((t.a = 1)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a[1] = 1)))`,
		`CREATE TABLE "public"."t" ("a" integer, CONSTRAINT "c" CHECK ((a = ANY (ARRAY[1, 2]) || b)))`,
		`CREATE TABLE "public"."t" ("a" character)`,
		`CREATE TABLE "public"."t" ("a" bit(3))`,
		`CREATE TABLE "public"."t" ("a" json)`,
		`CREATE TABLE "public"."t" ("a" timestamp)`,
		`CREATE TABLE "public"."t" ("a" interval year to month)`,
		`CREATE TABLE "public"."t" ("a" pg_catalog.int4)`,
		`CREATE TABLE "public"."t" ("a" text[][])`,
		`CREATE TABLE "public"."t" ("a" text COLLATE pg_catalog."C")`,
		`CREATE TABLE "public"."t" ("a" text DEFAULT date '2020-01-01')`,
		`CREATE TABLE "public"."t" ("a" text DEFAULT pg_read_file('/etc/passwd'))`, // taken, then refused by the checker
		`CREATE TABLE IF NOT EXISTS "public"."t" ("a" text)`,
		`CREATE TEMP TABLE "public"."t" ("a" text)`,
		`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk" FOREIGN KEY (a) REFERENCES public.c(x) MATCH FULL`,
		`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk" FOREIGN KEY (a) REFERENCES public.c(x) DEFERRABLE`,
		`ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk" FOREIGN KEY (a) REFERENCES public.c(x) ON DELETE SET NULL (a)`,
		`ALTER TABLE "public"."t" ADD CONSTRAINT "c" CHECK ((a > 0)) NOT VALID`,
		`CREATE INDEX i ON public.t USING btree (a DESC)`,
		`CREATE INDEX i ON public.t USING btree (lower(a)::text)`,
		`CREATE INDEX i ON public.t USING btree (a IS TRUE)`,
		`CREATE INDEX i ON public.t USING btree ((a IS UNKNOWN))`,
		`CREATE TABLE "public"."t" ("a" integer GENERATED BY DEFAULT AS (1) STORED)`,
		`CREATE TABLE "public"."t" ("a" integer GENERATED ALWAYS AS (1) VIRTUAL)`,
		`CREATE TABLE "public"."t" ("a" integer GENERATED ALWAYS AS IDENTITY ())`,
		`CREATE TABLE "public"."t" ("a" integer GENERATED ALWAYS AS IDENTITY (START 1))`,
		`CREATE TABLE "public"."t" ("a" integer GENERATED ALWAYS AS IDENTITY (START WITH 1 SEQUENCE NAME "public"."s"))`,
		`COMMENT ON TABLE "public"."t" IS E'x'`,
		`COMMENT ON TABLE "t" IS 'x'`,
		`COMMENT ON COLUMN "public"."t" IS 'x'`,
		`COMMENT ON CONSTRAINT "c" ON DOMAIN "public"."d" IS 'x'`,
		`COMMENT ON FUNCTION "public"."f"() IS 'x'`,
		`CREATE INDEX i ON public.t USING btree (a) INCLUDE (b)`,
		`CREATE INDEX CONCURRENTLY i ON public.t USING btree (a)`,
		`CREATE EXTENSION "citext" WITH SCHEMA "public"`,
		`CREATE EXTENSION IF NOT EXISTS "citext" WITH SCHEMA "public" VERSION '1.6'`,
		`CREATE EXTENSION IF NOT EXISTS "citext" SCHEMA "public"`,
		`SELECT pg_catalog.setval('"public"."s"', 1, true) FROM public.t`,
		`SELECT pg_catalog.set_config('role', 'postgres', false)::text`,
		`SELECT 1`,
		`CREATE TABLE "public"."t" ("a" text CHECK (a > 0) NO INHERIT)`,
		`CREATE TABLE "public"."t" ("a" text NULL)`,
		`SELECT pg_catalog.setval('"public"."s"', -1, true)`,
	} {
		if sql == `CREATE TABLE "public"."t" ("a" text DEFAULT pg_read_file('/etc/passwd'))` {
			// A function call is a shape the fast path takes; the checker
			// refuses the function (TestCheck_* in check_test.go).
			if !sameAsGrammar(t, sql) {
				t.Errorf("the fast path should take this call (the checker refuses it):\n%s", sql)
			}
			continue
		}
		if sameAsGrammar(t, sql) {
			t.Errorf("the fast path took what it should leave to the grammar:\n%s", sql)
		}
	}
}

// TestFastParse_CheckerRefusesTheSameAsWithTheGrammar: a refused statement
// is refused on the fast path's tree with the reason the grammar's tree
// gives.
func TestFastParse_CheckerRefusesTheSameAsWithTheGrammar(t *testing.T) {
	hostile := []Entry{
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."t" ("a" text DEFAULT pg_read_file('/etc/passwd'))`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."t" ("a" text DEFAULT pg_catalog.pg_terminate_backend(1))`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."t" ("a" text GENERATED ALWAYS AS (pg_read_file('/etc/passwd')) STORED)`},
		{Kind: "INDEX", Schema: "public", Name: "i", SQL: `CREATE INDEX i ON public.t USING btree (pg_catalog.pg_terminate_backend(1))`},
		{Kind: "COMMENT", Schema: "public", Name: "t", SQL: `COMMENT ON TABLE "pg_catalog"."pg_class" IS 'x'`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "pg_catalog"."t" ("a" text)`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."t" ("a" public.pg_authid)`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."other" ("a" text)`},
		{Kind: "INDEX", Schema: "public", Name: "i", SQL: `CREATE INDEX i ON public.t USING evil (a)`},
		{Kind: "INDEX", Schema: "public", Name: "i", SQL: `CREATE INDEX i ON pg_catalog.pg_class USING btree (relname)`},
		{Kind: "SEQUENCE SET", Schema: "public", Name: "s", SQL: `SELECT pg_catalog.setval('"pg_catalog"."x"', 1, true)`},
		{Kind: "CONSTRAINT", Schema: "public", Name: "fk", SQL: `ALTER TABLE ONLY "public"."t" ADD CONSTRAINT "fk" FOREIGN KEY (a) REFERENCES pg_catalog.pg_authid(oid)`},
		{Kind: "COMMENT", Schema: "public", Name: "t", SQL: `COMMENT ON ROLE postgres IS 'owned'`},
		{Kind: "SEQUENCE SET", Schema: "public", Name: "s", SQL: `SELECT pg_catalog.set_config('role', 'postgres', false)`},
		{Kind: "SEQUENCE SET", Schema: "public", Name: "s", SQL: `SELECT pg_catalog.setval('"public"."s"', 1, 1)`},
		{Kind: "SEQUENCE SET", Schema: "public", Name: "s", SQL: `SELECT setval('"public"."s"', 1, true)`},
		{Kind: "EXTENSION", Schema: "public", Name: "dblink", SQL: `CREATE EXTENSION IF NOT EXISTS "dblink" WITH SCHEMA "public"`},
		{Kind: "EXTENSION", Schema: "public", Name: "citext", SQL: `CREATE EXTENSION IF NOT EXISTS "citext" WITH SCHEMA "pg_catalog"`},
		{Kind: "TABLE", Schema: "public", Name: "t", SQL: `CREATE TABLE "public"."t" ("a" text CHECK ((length((query_to_xml('SELECT 1', true, true, ''))::text) > 0)))`},
	}
	h := &header{schemas: []string{"public"}, tables: []Name{{Schema: "public", Name: "t"}}}
	for _, o := range hostile {
		fast, ok := fastParse(o.SQL)
		if !ok {
			t.Errorf("the fast path does not take %s (the test wants its tree)", o.SQL)
			continue
		}
		slow, ok := grammarTree(t, o.SQL)
		if !ok {
			t.Fatalf("the grammar refuses %s", o.SQL)
		}
		check := func(stmt node) error {
			c, err := NewChecker(memberHeader, h.schemas, h.tables)
			if err != nil {
				t.Fatal(err)
			}
			c.tables[qname{"public", "t"}] = o.Kind != "TABLE"
			return c.checkStatement(o, stmt)
		}
		errFast, errSlow := check(fast), check(slow)
		if errFast == nil || errSlow == nil || errFast.Error() != errSlow.Error() {
			t.Errorf("%s:\nfast path: %v\ngrammar:   %v", o.SQL, errFast, errSlow)
		}
	}
}

// sameTypeAsGrammar fails the test when fastStatementType names a type for
// sql that the grammar's tree does not have; it reports whether it named one.
func sameTypeAsGrammar(t testing.TB, sql string) bool {
	t.Helper()
	typ, ok := fastStatementType(sql)
	if !ok {
		return false
	}
	tree, parsed := grammarTree(t, sql)
	if !parsed {
		return true // refused by the grammar too
	}
	if got, _, _ := unwrap(tree); got != typ {
		t.Fatalf("fastStatementType says %s, PostgreSQL's grammar builds %s for\n%s", typ, got, sql)
	}
	return true
}

// typedStatements are statements whose type fastStatementType names, each
// one the grammar parses (so the type is compared, not only refused).
var typedStatements = []struct{ sql, typ string }{
	{`COPY (SELECT 1) TO PROGRAM 'touch /tmp/x'`, "CopyStmt"},
	{`COPY "public"."t" FROM '/etc/passwd'`, "CopyStmt"},
	{`DO 'BEGIN NULL; END'`, "DoStmt"},
	{`DO LANGUAGE plpgsql 'BEGIN NULL; END'`, "DoStmt"},
	{`ALTER SYSTEM SET archive_command = 'touch /tmp/x'`, "AlterSystemStmt"},
	{`ALTER SYSTEM RESET ALL`, "AlterSystemStmt"},
	{`SET ROLE postgres`, "VariableSetStmt"},
	{`SET ROLE NONE`, "VariableSetStmt"},
	{`SET SESSION AUTHORIZATION postgres`, "VariableSetStmt"},
	{`SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE`, "VariableSetStmt"},
	{`SET SESSION search_path = 'x'`, "VariableSetStmt"},
	{`GRANT ALL ON SCHEMA public TO PUBLIC`, "GrantStmt"},
	{`GRANT SELECT (a, b) ON public.t TO x WITH GRANT OPTION`, "GrantStmt"},
	{`GRANT ALL PRIVILEGES on ALL TABLES IN SCHEMA public TO x`, "GrantStmt"},
	{`CREATE ROLE kat_evil SUPERUSER LOGIN`, "CreateRoleStmt"},
	{`CREATE FUNCTION public.kat_evil() RETURNS int LANGUAGE sql AS 'SELECT 1'`, "CreateFunctionStmt"},
	{`CREATE OR REPLACE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql`, "CreateFunctionStmt"},
	{`CREATE PROCEDURE p() LANGUAGE sql AS 'SELECT 1'`, "CreateFunctionStmt"},
	{`CREATE OR REPLACE PROCEDURE p() LANGUAGE sql AS 'SELECT 1'`, "CreateFunctionStmt"},
	{`CREATE TRIGGER t BEFORE INSERT ON public.t FOR EACH ROW EXECUTE FUNCTION f()`, "CreateTrigStmt"},
	{`CREATE OR REPLACE TRIGGER t AFTER DELETE ON public.t EXECUTE FUNCTION f()`, "CreateTrigStmt"},
	{`CREATE CONSTRAINT TRIGGER t AFTER INSERT ON public.t FOR EACH ROW EXECUTE FUNCTION f()`, "CreateTrigStmt"},
	{`CREATE EVENT TRIGGER kat_evil ON ddl_command_start EXECUTE FUNCTION pg_catalog.pg_reload_conf()`, "CreateEventTrigStmt"},
	{`CREATE TABLE "public"."clusters" AS SELECT rolname, rolpassword FROM pg_catalog.pg_authid`, "CreateTableAsStmt"},
	{`CREATE TABLE t AS SELECT 1`, "CreateTableAsStmt"},
	{`CREATE TABLE "p"."t" AS EXECUTE q`, "CreateTableAsStmt"},
}

// TestFastStatementType: the type fastStatementType names is the one the
// grammar builds, for every beginning it knows; what it does not know
// (other spellings, beginnings of several types, more than one statement)
// it does not name.
func TestFastStatementType(t *testing.T) {
	for _, c := range typedStatements {
		typ, ok := fastStatementType(c.sql)
		if !ok || typ != c.typ {
			t.Errorf("fastStatementType(%s) = %q, %v; want %s", c.sql, typ, ok, c.typ)
			continue
		}
		if tree, parsed := grammarTree(t, c.sql); !parsed {
			t.Errorf("the grammar does not parse %s (the test wants its type)", c.sql)
		} else if got, _, _ := unwrap(tree); got != c.typ {
			t.Errorf("the grammar builds %s for %s", got, c.sql)
		}
	}
	for _, sql := range []string{
		`CREATE ROLE x; COMMIT`,
		`COPY x FROM stdin -- comment`,
		`DO $$BEGIN NULL; END$$`,
		`copy (SELECT 1) TO PROGRAM 'x'`,
		`SET constraints ALL DEFERRED`,
		`SET CONSTRAINTS ALL DEFERRED`,
		`SET search_path = 'x'`,
		`GRANT r TO u`,
		`GRANT r TO u WITH on TRUE`,
		`CREATE TABLE "public"."t" (a int)`,
		`CREATE TABLE "public"."t" (a) AS SELECT 1`,
		`CREATE TABLE IF NOT EXISTS t AS SELECT 1`,
		`CREATE TEMP TABLE t AS SELECT 1`,
		`CREATE OR REPLACE ROLE x`,
		`CREATE USER x`,
		`CREATE SCHEMA x`,
		`ALTER TABLE x ADD CONSTRAINT c CHECK (true)`,
		`SELECT 1`,
	} {
		if typ, ok := fastStatementType(sql); ok {
			t.Errorf("fastStatementType(%s) = %s; it should leave it to the grammar", sql, typ)
		}
	}
}

// TestFastStatementType_RefusesAsTheTree: where the type alone refuses a
// hostile entry (check_test.go), the refusal is the one the checker gives
// on the grammar's tree; and the hostile corpus does use it.
func TestFastStatementType_RefusesAsTheTree(t *testing.T) {
	used := 0
	for _, tt := range hostileEntries {
		typ, ok := fastStatementType(tt.obj.SQL)
		if !ok {
			continue
		}
		errType := entryHolds(tt.obj.Kind, typ)
		if errType == nil {
			continue
		}
		used++
		tree, parsed := grammarTree(t, tt.obj.SQL)
		if !parsed {
			t.Errorf("%s: the grammar does not parse %s", tt.name, tt.obj.SQL)
			continue
		}
		h := goodHeader()
		c, err := NewChecker(memberHeader, h.schemas, h.tables)
		if err != nil {
			t.Fatal(err)
		}
		if errTree := c.checkStatement(tt.obj, tree); errTree == nil || errTree.Error() != errType.Error() {
			t.Errorf("%s:\nby type: %v\nby tree: %v", tt.name, errType, errTree)
		}
	}
	if used < 8 {
		t.Errorf("the type refused %d hostile entries; the corpus has at least 8 it should refuse", used)
	}
}

// TestEntryStatements_EveryKind: every kind of entry a stream may hold says
// which statements it holds.
func TestEntryStatements_EveryKind(t *testing.T) {
	for _, kinds := range []map[string]bool{preDataKinds, postDataKinds} {
		for k := range kinds {
			if len(entryStatements[k]) == 0 {
				t.Errorf("entry kind %q has no statement types", k)
			}
		}
	}
}

// FuzzFastParse: whatever the fast path takes, PostgreSQL's grammar reads as
// one statement with the same tree.
func FuzzFastParse(f *testing.F) {
	for _, s := range dumpedStatements {
		f.Add(s)
	}
	for _, o := range append(append([]Entry{}, goodPre...), goodPost...) {
		f.Add(o.SQL)
	}
	for _, s := range typedStatements {
		f.Add(s.sql)
	}
	warmParser(f)
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 4096 {
			return
		}
		sameAsGrammar(t, sql)
		sameTypeAsGrammar(t, sql)
	})
}

// FuzzFastParseGenerated builds statements of the shapes the fast path
// knows from the fuzzer's bytes, mixing in the spellings at its edges
// (keywords as names, operator runs, odd numbers and types, white space,
// precedence), and compares the trees as FuzzFastParse does.
func FuzzFastParseGenerated(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("some bytes to start from"))
	f.Add(bytes.Repeat([]byte{1, 7, 3, 250, 9}, 40))
	warmParser(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &stmtGen{data: data}
		sql := g.statement()
		sameAsGrammar(t, sql)
		sameTypeAsGrammar(t, sql)
	})
}

// TestFastParseGenerated_TakesMost: the generator makes statements the fast
// path takes (so the fuzz target compares trees, not only refusals).
func TestFastParseGenerated_TakesMost(t *testing.T) {
	taken, typed := 0, 0
	const n = 400
	for i := 0; i < n; i++ {
		// The first byte picks the statement's shape: every shape in turn.
		seed := []byte(fmt.Sprintf("%cseed %d %d", byte(i), i, i*7919))
		g := &stmtGen{data: bytes.Repeat(seed, 8)}
		sql := g.statement()
		if sameAsGrammar(t, sql) {
			taken++
		}
		if sameTypeAsGrammar(t, sql) {
			typed++
		}
	}
	t.Logf("the fast path took %d of %d generated statements; fastStatementType named the type of %d", taken, n, typed)
	if typed < n/50 {
		t.Errorf("fastStatementType named the type of %d of %d generated statements; the generator should make some it knows", typed, n)
	}
	if taken < n/10 {
		t.Errorf("the fast path took %d of %d generated statements; the generator should mostly stay in its subset", taken, n)
	}
}

// stmtGen turns bytes into a statement.
type stmtGen struct {
	data  []byte
	pos   int
	depth int
}

func (g *stmtGen) pick(n int) int {
	if g.pos >= len(g.data) {
		return 0
	}
	b := int(g.data[g.pos])
	g.pos++
	return b % n
}

func (g *stmtGen) one(options ...string) string { return options[g.pick(len(options))] }

// mostly picks from good seven times in eight, else from edge.
func (g *stmtGen) mostly(good []string, edge ...string) string {
	if len(edge) > 0 && g.pick(8) == 0 {
		return g.one(edge...)
	}
	return g.one(good...)
}

func (g *stmtGen) sp() string {
	return g.mostly([]string{" "}, "  ", "\n", "\t", "", " --\n", " /**/ ")
}

func (g *stmtGen) name() string {
	return g.mostly([]string{`"public"`, `"t"`, `a`, `name`, `cluster_id`, `"Mixed Case"`, `"with ""quote"""`, `type`,
		`key`, `data`, `value`, `"` + strings.Repeat("x", 63) + `"`, `"a b"`, `_x1`, `"é"`, `action`, `cycle`, `zone`, `"NULL"`, `"select"`},
		`select`, `user`, `Foo`, `FOO`, strings.Repeat("y", 64), `"`+strings.Repeat("x", 64)+`"`, `json`, `time`, `x$`, `é`,
		`between`, `position`, `current_user`, `null`, `true`, `""`, `U&"a"`)
}

func (g *stmtGen) qname() string { return g.name() + g.one(".", ".", ".", " . ", "") + g.name() }

func (g *stmtGen) typ() string {
	base := g.mostly([]string{"text", "bigint", "integer", "smallint", "boolean", "real", "double precision", "numeric", "numeric(10,2)",
		"numeric(10)", "character varying", "character varying(255)", "character(3)", "timestamp with time zone",
		"timestamp without time zone", "timestamp(3) with time zone", "time with time zone", "time without time zone",
		"interval", "inet", "cidr", "jsonb", "bytea", "uuid", "date", "regclass", "public.myenum", `"public"."E"`},
		"character", "json", "pg_catalog.int4", "bit(2)", "timestamp", "double", "varchar(3)", "int", "character varying(0)",
		"numeric(2147483648)", "time", "interval(3)", "character varying (3)")
	return base + g.mostly([]string{"", "", "", "[]"}, "[][]", "[3]", " []", "[ ]")
}

func (g *stmtGen) number() string {
	return g.mostly([]string{"0", "1", "42", "1.5", "2147483647", "2147483648", "9223372036854775807", "-1", "-2147483648", "0.0"},
		"007", "1e5", "0x1f", "1_000", "3.", ".5", "- 1", "+1", "1.5.1")
}

func (g *stmtGen) term() string {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 6 {
		return g.one("'x'::text", "1", "a", "true")
	}
	var t string
	switch g.pick(11) {
	case 0:
		t = g.mostly([]string{"'x'", "''", "'it''s'", "'{}'", "'é'", "'-1'"}, "'a\\b'", "E'x'", "'x' 'y'", "'x''", "N'x'")
	case 1:
		t = g.number()
	case 2:
		t = g.mostly([]string{"true", "false", "NULL", "CURRENT_TIMESTAMP", "now()"}, "null", "TRUE", "CURRENT_DATE", "CURRENT_TIMESTAMP(3)", "current_timestamp")
	case 3:
		t = g.name()
	case 4:
		t = g.mostly([]string{"nextval", "length", "lower", "pg_catalog.now", "public.f", "now"}, "coalesce", "NOW", "current_user", "pg_catalog.coalesce") + "(" + g.args() + ")"
	case 5:
		t = "ARRAY[" + g.args() + "]"
	case 6, 7:
		t = "(" + g.expr() + ")"
	case 8:
		t = g.term() + "::" + g.typ()
	case 9:
		t = "'" + g.one("public.events_id_seq", "x") + "'::regclass"
	default:
		t = g.name() + g.mostly([]string{""}, "[1]", ".x", " COLLATE \"C\"")
	}
	return t
}

func (g *stmtGen) args() string {
	n := g.pick(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.expr()
	}
	return strings.Join(parts, g.one(", ", ",", " , "))
}

func (g *stmtGen) op() string {
	return g.mostly([]string{"=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "||"}, "!=", "=-", "~~", "%", "^", "==", "<->", "@>", "<=>", "-+")
}

func (g *stmtGen) expr() string {
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 6 {
		return g.term()
	}
	switch g.pick(9) {
	case 0, 1:
		return g.term()
	case 2, 3:
		return g.term() + g.sp() + g.op() + g.sp() + g.term()
	case 4:
		return g.term() + " " + g.op() + " " + g.one("ANY", "ALL", "SOME") + " (" + g.expr() + ")"
	case 5:
		op := g.one("AND", "OR")
		s := g.term()
		for i := 0; i <= g.pick(3); i++ {
			s += " " + g.one(op, op, op, "AND", "OR", "and") + " " + g.term()
		}
		return s
	case 6:
		return "NOT " + g.term()
	case 7:
		return g.term() + g.one(" IS NULL", " IS NOT NULL", " IS NULL IS NULL", " ISNULL", " IS TRUE", " IS NOT TRUE", " IS FALSE",
			" IS NOT FALSE", " IS UNKNOWN", " IS true", " IS TRUE IS FALSE")
	default:
		return g.term() + " " + g.op() + " " + g.term() + " " + g.op() + " " + g.term()
	}
}

func (g *stmtGen) column() string {
	s := g.name() + " " + g.typ()
	switch g.pick(4) {
	case 0, 1:
		s += " DEFAULT " + g.term()
	case 2:
		s += " GENERATED " + g.mostly([]string{"ALWAYS AS (" + g.expr() + ") STORED", "ALWAYS AS IDENTITY", "BY DEFAULT AS IDENTITY",
			g.one("ALWAYS", "BY DEFAULT") + " AS IDENTITY (" + g.seqOptions(true) + ")"},
			"BY DEFAULT AS (1) STORED", "ALWAYS AS (1)", "ALWAYS AS (1) VIRTUAL", "AS IDENTITY", "ALWAYS AS IDENTITY ()", "ALWAYS AS IDENTITY (SEQUENCE NAME "+g.qname()+")")
	}
	if g.pick(2) == 0 {
		s += g.one(" NOT NULL", " NULL", " NOT  NULL")
	}
	return s
}

// seqOptions makes a sequence option list; identity lists may start with
// SEQUENCE NAME.
func (g *stmtGen) seqOptions(identity bool) string {
	var opts []string
	if identity && g.pick(2) == 0 {
		opts = append(opts, "SEQUENCE NAME "+g.qname())
	}
	for i := 0; i < g.pick(7); i++ {
		opts = append(opts, g.one("AS "+g.typ(), "START WITH "+g.number(), "INCREMENT BY "+g.number(), "MINVALUE "+g.number(),
			"MAXVALUE "+g.number(), "CACHE "+g.number(), "CYCLE", "NO CYCLE", "NO MINVALUE", "START "+g.number()))
	}
	return strings.Join(opts, " ")
}

// indexElems makes an index's ( keys ): columns, calls, ( expr ).
func (g *stmtGen) indexElems() string {
	n := 1 + g.pick(3)
	parts := make([]string, n)
	for i := range parts {
		switch g.pick(4) {
		case 0:
			parts[i] = g.mostly([]string{"lower", "public.f", "length"}, "coalesce", "pg_catalog.now") + "(" + g.args() + ")" + g.mostly([]string{""}, "::text", " DESC")
		case 1:
			parts[i] = "(" + g.expr() + ")"
		default:
			parts[i] = g.name()
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (g *stmtGen) nameList() string {
	n := 1 + g.pick(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.name()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (g *stmtGen) statement() string {
	switch g.pick(9) {
	case 0:
		return "CREATE SCHEMA " + g.name()
	case 7:
		s := "COMMENT ON " + g.mostly([]string{"SCHEMA " + g.name(), "TABLE " + g.qname(), "SEQUENCE " + g.qname(), "INDEX " + g.qname(),
			"COLUMN " + g.qname() + "." + g.name(), "CONSTRAINT " + g.name() + " ON " + g.qname()},
			"ROLE "+g.name(), "COLUMN "+g.qname(), "FUNCTION "+g.qname()+"()", "CONSTRAINT "+g.name()+" ON DOMAIN "+g.qname())
		return s + " IS " + g.mostly([]string{"'x'", "''", "'it''s'", "NULL", "'é'"}, "E'x'", "null", "1", "'x' 'y'")
	case 1:
		s := "CREATE " + g.one("", "UNLOGGED ") + "SEQUENCE " + g.qname()
		if o := g.seqOptions(false); o != "" {
			s += " " + o
		}
		return s
	case 2:
		return "ALTER SEQUENCE " + g.qname() + " OWNED BY " + g.name() + "." + g.name() + "." + g.name()
	case 3:
		n := 1 + g.pick(4)
		parts := make([]string, n)
		for i := range parts {
			if g.pick(4) == 0 {
				parts[i] = "CONSTRAINT " + g.name() + " CHECK (" + g.expr() + ")"
			} else {
				parts[i] = g.column()
			}
		}
		s := "CREATE " + g.one("", "UNLOGGED ") + "TABLE " + g.qname() + " (" + strings.Join(parts, ", ") + ")"
		if g.pick(3) == 0 {
			s += " WITH (" + g.one("fillfactor", "toast.fillfactor", "autovacuum_enabled", "evil.x") + "=" + g.one("'70'", "70", "'x'") + ")"
		}
		return s
	case 4:
		s := "ALTER TABLE " + g.one("ONLY ", "") + g.qname() + " ADD CONSTRAINT " + g.name() + " "
		switch g.pick(4) {
		case 0:
			s += "PRIMARY KEY " + g.nameList()
		case 1:
			s += "UNIQUE " + g.nameList()
		case 2:
			s += "CHECK (" + g.expr() + ")"
		default:
			s += "FOREIGN KEY " + g.nameList() + " REFERENCES " + g.qname() + g.nameList() +
				g.one("", " ON DELETE CASCADE", " ON UPDATE RESTRICT ON DELETE SET NULL", " ON DELETE NO ACTION", " ON DELETE SET DEFAULT", " MATCH FULL")
		}
		return s
	case 5:
		s := "CREATE " + g.one("", "UNIQUE ") + "INDEX " + g.name() + " ON " + g.one("", "ONLY ") + g.qname() + " USING " +
			g.one("btree", "hash", "gin", "evil") + " " + g.indexElems()
		if g.pick(2) == 0 {
			s += " WHERE " + g.term()
		}
		return s
	case 6:
		return "SELECT pg_catalog.setval(" + g.one("'\"public\".\"s\"'", "'x'", "1") + ", " + g.number() + ", " + g.one("true", "false", "1", "NULL") + ")"
	default:
		return g.one("CREATE", "ALTER", "SELECT", "COPY", "DO", "ALTER SYSTEM", "SET ROLE", "SET SESSION", "GRANT ALL ON",
			"GRANT", "CREATE ROLE", "CREATE OR REPLACE FUNCTION", "CREATE TRIGGER", "CREATE EVENT TRIGGER",
			"CREATE TABLE "+g.qname()+" AS") + " " + g.expr()
	}
}

// warmParser compiles the parser's WebAssembly module before the first input:
// that takes seconds, and the fuzzing engine takes an input that runs for
// 10 s as a hang. Only a fuzzing worker runs inputs under that watch: the
// coordinator process (which runs this function too, to collect the seeds,
// and never calls the fuzz function) and a plain test run skip it, which
// spares each fuzz target one compilation of the grammar under coverage
// instrumentation (5-15 s of CPU on a loaded machine).
func warmParser(f *testing.F) {
	if !fuzzWorker() {
		return
	}
	if _, ok := grammarTree(f, "SELECT 1"); !ok {
		f.Fatal("PostgreSQL's grammar does not parse SELECT 1")
	}
}

// fuzzWorker tells whether this process is a fuzzing worker: cmd/go starts
// those with the testing package's -test.fuzzworker flag.
func fuzzWorker() bool {
	fl := flag.Lookup("test.fuzzworker")
	return fl != nil && fl.Value.String() == "true"
}
