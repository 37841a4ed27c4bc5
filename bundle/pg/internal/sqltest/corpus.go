// Package sqltest is the statement corpus the tests of bundle/pg and of its
// SQL guard (internal/sqlguard) share: a small stream schema written the way
// Dump writes it, and hostile entries that must be refused. Only tests
// import it; it imports nothing, so that sqlguard's own tests can.
package sqltest

// Entry is one pre-data or post-data entry (sqlguard.Entry, pg's object).
type Entry struct{ Kind, Schema, Name, SQL string }

// Table is one table of the header.
type Table struct{ Schema, Name string }

// Schemas and Tables are the header of the good stream: GoodPre and
// GoodPost are its statements (copied from a dump of
// test/pgtest/testdata/edge-schema.sql and the assisted-service schema).
var (
	Schemas = []string{"Mixed Schema", "public"}
	Tables  = []Table{{Schema: "public", Name: "everything"}, {Schema: "public", Name: "child"}}
)

var GoodPre = []Entry{
	{Kind: "SCHEMA", Schema: "Mixed Schema", Name: "Mixed Schema", SQL: `CREATE SCHEMA "Mixed Schema"`},
	{Kind: "COMMENT", Schema: "Mixed Schema", Name: "Mixed Schema", SQL: `COMMENT ON SCHEMA "Mixed Schema" IS 'a schema with a space and capitals'`},
	{Kind: "SCHEMA", Schema: "public", Name: "public", SQL: `CREATE SCHEMA "public"`},
	{Kind: "EXTENSION", Schema: "public", Name: "citext", SQL: `CREATE EXTENSION IF NOT EXISTS "citext" WITH SCHEMA "public"`},
	{Kind: "TYPE", Schema: "public", Name: "mood", SQL: `CREATE TYPE "public"."mood" AS ENUM ('sad', 'ok', 'it''s', 'back\slash')`},
	{Kind: "TYPE", Schema: "public", Name: "mood", SQL: `COMMENT ON TYPE "public"."mood" IS 'an enum'`},
	{Kind: "TYPE", Schema: "public", Name: "posint", SQL: `CREATE DOMAIN "public"."posint" AS integer DEFAULT 1 NOT NULL CONSTRAINT "posint_check" CHECK ((VALUE > 0))`},
	{Kind: "TYPE", Schema: "public", Name: "email", SQL: `CREATE DOMAIN "public"."email" AS public.citext CONSTRAINT "email_at" CHECK ((VALUE OPERATOR(public.~) '@'::public.citext))`},
	{Kind: "TYPE", Schema: "Mixed Schema", Name: "Label", SQL: `CREATE DOMAIN "Mixed Schema"."Label" AS text COLLATE pg_catalog."C" CONSTRAINT "Label_check" CHECK ((length(VALUE) < 100))`},
	{Kind: "TYPE", Schema: "public", Name: "floatrange", SQL: `CREATE TYPE "public"."floatrange" AS RANGE (subtype = double precision, multirange_type_name = public.floatmultirange, subtype_diff = float8mi)`},
	{Kind: "TYPE", Schema: "public", Name: "pair", SQL: `CREATE TYPE "public"."pair" AS ("a" integer, "b" text COLLATE pg_catalog."C")`},
	{Kind: "SEQUENCE", Schema: "Mixed Schema", Name: "Odd Seq", SQL: `CREATE SEQUENCE "Mixed Schema"."Odd Seq" AS bigint START WITH 100 INCREMENT BY 5 MINVALUE 100 MAXVALUE 100000 CACHE 3 CYCLE`},
	{Kind: "SEQUENCE", Schema: "public", Name: "everything_id_seq", SQL: `CREATE SEQUENCE "public"."everything_id_seq" AS integer START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 CACHE 1 NO CYCLE`},
	{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" integer DEFAULT nextval('public.everything_id_seq'::regclass) NOT NULL, "n" numeric(20,6), "vc" character varying(10) COLLATE pg_catalog."C", "ts" timestamp with time zone, "arr" text[], "m" public.mood, "p" public.posint, "e" public.email, "ci" public.citext, "fr" public.floatrange, "mr" public.floatmultirange, "pr" public.pair, "t" text, "jb" jsonb, "b" boolean, "i4" integer, "gen_len" integer GENERATED ALWAYS AS (length(t)) STORED, "def_now" timestamp with time zone DEFAULT now() NOT NULL, "lb" text DEFAULT 'cluster-managed'::text NOT NULL, CONSTRAINT "everything_i4_check" CHECK (((i4 IS NULL) OR (i4 <> 13))), CONSTRAINT "chk_lb" CHECK ((lb = ANY (ARRAY['cluster-managed'::text, 'user-managed'::text])))) WITH (fillfactor='90', toast.autovacuum_enabled='false')`},
	{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ALTER COLUMN "t" SET STATISTICS 500`},
	{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ALTER COLUMN "i4" SET (n_distinct='-0.5')`},
	{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ALTER COLUMN "t" SET STORAGE EXTERNAL`},
	{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ALTER COLUMN "t" SET COMPRESSION pglz`},
	{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" REPLICA IDENTITY FULL`},
	{Kind: "CHECK CONSTRAINT", Schema: "public", Name: "not_yet_valid", SQL: `ALTER TABLE "public"."everything" ADD CONSTRAINT "not_yet_valid" CHECK ((i4 < 1000000)) NOT VALID`},
	{Kind: "COMMENT", Schema: "public", Name: "everything", SQL: "COMMENT ON TABLE \"public\".\"everything\" IS 'every type, with ''quotes'' and\nnewlines'"},
	{Kind: "COMMENT", Schema: "public", Name: "everything.t", SQL: `COMMENT ON COLUMN "public"."everything"."t" IS 'text column'`},
	{Kind: "COMMENT", Schema: "public", Name: "everything_i4_check", SQL: `COMMENT ON CONSTRAINT "everything_i4_check" ON "public"."everything" IS 'unlucky'`},
	{Kind: "TABLE", Schema: "public", Name: "child", SQL: `CREATE TABLE "public"."child" ("id" integer GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME "public"."child_id_seq" START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 CACHE 1 NO CYCLE) NOT NULL, "pa" integer)`},
	{Kind: "SEQUENCE OWNED BY", Schema: "public", Name: "everything_id_seq", SQL: `ALTER SEQUENCE "public"."everything_id_seq" OWNED BY "public"."everything"."id"`},
}

var GoodPost = []Entry{
	{Kind: "CONSTRAINT", Schema: "public", Name: "everything_pkey", SQL: `ALTER TABLE ONLY "public"."everything" ADD CONSTRAINT "everything_pkey" PRIMARY KEY (id)`},
	{Kind: "CONSTRAINT", Schema: "public", Name: "booking_no_overlap", SQL: `ALTER TABLE ONLY "public"."everything" ADD CONSTRAINT "booking_no_overlap" EXCLUDE USING gist (fr WITH &&)`},
	{Kind: "INDEX", Schema: "public", Name: "everything_desc", SQL: `CREATE INDEX everything_desc ON public.everything USING btree (i4 DESC NULLS LAST, vc text_pattern_ops)`},
	{Kind: "CLUSTER", Schema: "public", Name: "everything_desc", SQL: `ALTER TABLE ONLY "public"."everything" CLUSTER ON "everything_desc"`},
	{Kind: "INDEX", Schema: "public", Name: "everything_expr", SQL: `CREATE INDEX everything_expr ON public.everything USING btree (lower((vc)::text), (((i4)::bigint + 1)))`},
	{Kind: "COMMENT", Schema: "public", Name: "everything_expr", SQL: `COMMENT ON INDEX "public"."everything_expr" IS 'expression index'`},
	{Kind: "INDEX", Schema: "public", Name: "everything_partial", SQL: `CREATE INDEX everything_partial ON public.everything USING btree (i4) WHERE b`},
	{Kind: "INDEX", Schema: "public", Name: "everything_u", SQL: `CREATE UNIQUE INDEX everything_u ON public.everything USING btree (t) INCLUDE (i4) WITH (fillfactor='70')`},
	{Kind: "REPLICA IDENTITY", Schema: "public", Name: "everything_u", SQL: `ALTER TABLE ONLY "public"."everything" REPLICA IDENTITY USING INDEX "everything_u"`},
	{Kind: "FK CONSTRAINT", Schema: "public", Name: "child_fk", SQL: `ALTER TABLE ONLY "public"."child" ADD CONSTRAINT "child_fk" FOREIGN KEY (pa) REFERENCES public.everything(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED`},
	{Kind: "SEQUENCE SET", Schema: "Mixed Schema", Name: "Odd Seq", SQL: `SELECT pg_catalog.setval('"Mixed Schema"."Odd Seq"', 100, false)`},
	{Kind: "SEQUENCE SET", Schema: "public", Name: "child_id_seq", SQL: `SELECT pg_catalog.setval('"public"."child_id_seq"', 12, true)`},
}

// Hostile is an entry that must be refused, in post-data (Post) or
// pre-data, with an error that says Want.
type Hostile struct {
	Name  string
	Post  bool
	Entry Entry
	Want  string
}

// HostileEntries are statements an attacker who can only encrypt to the
// public recipient might put in a stream; each must be refused, wherever it
// stands.
var HostileEntries = []Hostile{
	{"create role", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `CREATE ROLE evil SUPERUSER LOGIN PASSWORD 'x'`}, "CREATE ROLE statement is not allowed"},
	{"table as select from pg_authid", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `CREATE TABLE public.x AS SELECT rolname, rolpassword FROM pg_catalog.pg_authid`}, "CREATE TABLE AS statement is not allowed"},
	{"function", false, Entry{Kind: "TABLE", Schema: "public", Name: "f", SQL: `CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'`}, "CREATE FUNCTION statement is not allowed"},
	{"event trigger", true, Entry{Kind: "INDEX", Schema: "public", Name: "t", SQL: `CREATE EVENT TRIGGER t ON ddl_command_start EXECUTE FUNCTION public.f()`}, "CREATE EVENT TRIG statement is not allowed"},
	{"copy to program", true, Entry{Kind: "SEQUENCE SET", Schema: "public", Name: "s", SQL: `COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned'`}, "COPY statement is not allowed"},
	{"commit smuggling", false, Entry{Kind: "SCHEMA", Schema: "public", Name: "public", SQL: `COMMIT; CREATE ROLE evil SUPERUSER`}, "holds 2 statements"},
	{"two statements", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" (a int); CREATE TABLE "public"."y" (a int)`}, "holds 2 statements"},
	{"do block", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `DO $$BEGIN EXECUTE 'CREATE ROLE evil SUPERUSER'; END$$`}, "DO statement is not allowed"},
	{"alter system", true, Entry{Kind: "CLUSTER", Schema: "public", Name: "x", SQL: `ALTER SYSTEM SET archive_command = 'touch /tmp/pwned'`}, "ALTER SYSTEM statement is not allowed"},
	{"set role", false, Entry{Kind: "TABLE OPTION", Schema: "public", Name: "x", SQL: `SET ROLE postgres`}, "VARIABLE SET statement is not allowed"},
	{"reset session authorization", false, Entry{Kind: "COMMENT", Schema: "public", Name: "x", SQL: `RESET SESSION AUTHORIZATION`}, "statement is not allowed"},
	{"quote in identifier", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" (a int); CREATE ROLE evil SUPERUSER; --" (a int)`}, "holds 2 statements"},
	{"default reads a file", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text DEFAULT pg_catalog.pg_read_file('/etc/passwd'))`}, `function "pg_catalog"."pg_read_file" is not allowed`},
	{"check runs a query", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text CHECK (length(query_to_xml('CREATE ROLE evil', true, true, '')::text) > 0))`}, `function "query_to_xml" is not allowed`},
	{"default sub-select", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text DEFAULT (SELECT rolpassword FROM pg_catalog.pg_authid LIMIT 1))`}, "SUB LINK is not allowed"},
	{"generated column calls dblink", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text GENERATED ALWAYS AS (public.dblink_exec('host=x', 'x')) STORED)`}, `function "public"."dblink_exec" is not allowed`},
	{"type that is not a type", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" pg_catalog.pg_authid)`}, `type "pg_catalog"."pg_authid" is neither`},
	{"unknown type", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" public.nothing)`}, `type "public"."nothing" is neither`},
	{"cast to a lookup type", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text DEFAULT ('pg_read_file'::regproc)::text)`}, `type "regproc" is neither`},
	{"grant", true, Entry{Kind: "CONSTRAINT", Schema: "public", Name: "x", SQL: `GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC`}, "GRANT statement is not allowed"},
	{"untrusted extension", false, Entry{Kind: "EXTENSION", Schema: "public", Name: "plpython3u", SQL: `CREATE EXTENSION IF NOT EXISTS "plpython3u" WITH SCHEMA "public"`}, `extension "plpython3u" is not allowed`},
	{"dblink extension", false, Entry{Kind: "EXTENSION", Schema: "public", Name: "dblink", SQL: `CREATE EXTENSION IF NOT EXISTS dblink`}, `extension "dblink" is not allowed`},
	{"extension cascade", false, Entry{Kind: "EXTENSION", Schema: "public", Name: "citext", SQL: `CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA public CASCADE`}, "CREATE EXTENSION takes only WITH SCHEMA"},
	{"extension in pg_catalog", false, Entry{Kind: "EXTENSION", Schema: "pg_catalog", Name: "citext", SQL: `CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA pg_catalog`}, "must be created in a schema the header lists"},
	{"setval plus sleep", true, Entry{Kind: "SEQUENCE SET", Schema: "public", Name: "child_id_seq", SQL: `SELECT pg_catalog.setval('"public"."child_id_seq"', 1, true), pg_catalog.pg_sleep(100)`}, "only SELECT pg_catalog.setval"},
	{"set_config as sequence set", true, Entry{Kind: "SEQUENCE SET", Schema: "public", Name: "x", SQL: `SELECT pg_catalog.set_config('role', 'postgres', false)`}, "only SELECT pg_catalog.setval"},
	{"setval from a table", true, Entry{Kind: "SEQUENCE SET", Schema: "public", Name: "x", SQL: `SELECT pg_catalog.setval('"public"."child_id_seq"', 1, true) FROM pg_catalog.pg_authid`}, "only SELECT pg_catalog.setval"},
	{"setval of a foreign sequence", true, Entry{Kind: "SEQUENCE SET", Schema: "public", Name: "x", SQL: `SELECT pg_catalog.setval('"other"."seq"', 1, true)`}, "not a sequence the stream creates"},
	{"index expression calls a function", true, Entry{Kind: "INDEX", Schema: "public", Name: "i", SQL: `CREATE INDEX i ON public.everything USING btree (pg_catalog.pg_terminate_backend(i4))`}, "is not allowed"},
	{"index on a catalog", true, Entry{Kind: "INDEX", Schema: "pg_catalog", Name: "i", SQL: `CREATE INDEX i ON pg_catalog.pg_class USING btree (relname)`}, `which the header does not list`},
	{"comment on role", false, Entry{Kind: "COMMENT", Schema: "public", Name: "x", SQL: `COMMENT ON ROLE postgres IS 'x'`}, "COMMENT ON ROLE is not allowed"},
	{"comment on catalog table", false, Entry{Kind: "COMMENT", Schema: "pg_catalog", Name: "pg_class", SQL: `COMMENT ON TABLE pg_catalog.pg_class IS 'x'`}, `schema "pg_catalog"`},
	{"inherits a catalog", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" (a int) INHERITS (pg_catalog.pg_authid)`}, "inhRelations"},
	{"owner change", false, Entry{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" OWNER TO postgres`}, "ALTER TABLE action with newowner is not allowed"},
	{"enable trigger", false, Entry{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ENABLE TRIGGER ALL`}, "is not allowed"},
	{"schema with authorization", false, Entry{Kind: "SCHEMA", Schema: "public", Name: "public", SQL: `CREATE SCHEMA "public" AUTHORIZATION postgres`}, "authrole"},
	{"schema with elements", false, Entry{Kind: "SCHEMA", Schema: "public", Name: "public", SQL: `CREATE SCHEMA "public" CREATE VIEW v AS SELECT rolpassword FROM pg_catalog.pg_authid`}, "schemaElts"},
	{"temporary table", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TEMPORARY TABLE everything (a int)`}, "must be schema-qualified"},
	{"unknown kind", false, Entry{Kind: "SQL", Schema: "public", Name: "x", SQL: `SELECT 1`}, `"SQL" entries are not allowed`},
	{"view", false, Entry{Kind: "TABLE", Schema: "public", Name: "v", SQL: `CREATE VIEW public.v AS SELECT 1`}, "VIEW statement is not allowed"},
	{"rule", true, Entry{Kind: "CONSTRAINT", Schema: "public", Name: "r", SQL: `CREATE RULE r AS ON INSERT TO public.everything DO ALSO NOTIFY x`}, "RULE statement is not allowed"},
	{"trigger", true, Entry{Kind: "CONSTRAINT", Schema: "public", Name: "t", SQL: `CREATE TRIGGER t AFTER INSERT ON public.everything FOR EACH ROW EXECUTE FUNCTION public.f()`}, "TRIG statement is not allowed"},
	{"load library", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `LOAD '/tmp/evil.so'`}, "LOAD statement is not allowed"},
	{"call", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `CALL public.p()`}, "CALL statement is not allowed"},
	{"range with a user function", false, Entry{Kind: "TYPE", Schema: "public", Name: "r", SQL: `CREATE TYPE "public"."r" AS RANGE (subtype = double precision, subtype_diff = public.evil)`}, "built-in range support functions"},
	{"operator from a user schema", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" int CHECK (id OPERATOR("Mixed Schema".=) 1))`}, "neither pg_catalog nor an extension's"},
	{"user collation", false, Entry{Kind: "TABLE", Schema: "public", Name: "everything", SQL: `CREATE TABLE "public"."everything" ("id" text COLLATE public.mine)`}, "built-in (pg_catalog) collations"},
	{"tablespace", true, Entry{Kind: "INDEX", Schema: "public", Name: "i", SQL: `CREATE INDEX i ON public.everything USING btree (i4) TABLESPACE pg_global`}, "tableSpace"},
	{"security label", false, Entry{Kind: "COMMENT", Schema: "public", Name: "x", SQL: `SECURITY LABEL ON TABLE public.everything IS 'x'`}, "SEC LABEL statement is not allowed"},
	{"unparsable", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: `CREATE TABLE (`}, "not valid PostgreSQL"},
	{"nul byte", false, Entry{Kind: "TABLE", Schema: "public", Name: "x", SQL: "CREATE TABLE \"public\".\"x\" (a int)\x00; CREATE ROLE evil"}, "NUL byte"},
}
