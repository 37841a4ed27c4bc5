// Package pg dumps a PostgreSQL database into a self-describing byte stream
// and restores such a stream into an empty database, with pg_dump-grade
// fidelity, using only pgx (no pg_dump binary at run time).
//
// Dump reads the schema from the catalogs and every table with COPY TO, all
// inside one REPEATABLE READ, READ ONLY transaction (one snapshot), and streams
// the result: memory stays flat whatever the size of the data. A table whose
// columns are all of built-in types with a stable binary representation
// (copybinary.go: booleans, integers, floats, numeric, text and character
// types, bytea, json and jsonb, date and time types, uuid, inet, cidr,
// macaddr, and arrays of these) goes in COPY's binary format, which the
// server writes and reads without formatting or parsing each value; any
// other table (an enum, domain, range, composite or extension type among its
// columns) in text. Restore loads a stream into an empty target all or
// nothing, and Verify checks a stream offline.
//
// # Restore
//
// A stream of format 1.2, 2.0 or 3.0 is restored in stages, on several connections
// (staged.go): the tables are created in private staging schemas
// (kubectl_assisted_staging_<stream id>_<n>, marked as ours by a comment; no
// one reads them, and they never make a target count as non-empty), loaded
// there two at a time (TRUNCATE and COPY FREEZE, one transaction per table;
// the stream, which holds one table after the other, is read ahead into
// bounded feeds that spill to an unlinked, compressed spool file), each
// table's ANALYZE, keys and indexes run on other connections as soon as it is
// loaded, and foreign keys after every table. Then ONE short transaction
// checks the target again (or, with Replace, drops the old objects: they
// were there, unlocked, until then), moves every table, sequence and type
// into its real schema (ALTER ... SET SCHEMA; indexes, constraints, owned
// sequences and statistics go with their tables), sets the sequences, drops
// the empty staging schemas, runs the caller's BeforeCommit hook, and
// commits. Before any row is read, the staged statements (the stream's,
// with their schema names rewritten, stagesql.go) are tried on the server,
// post-data included, and the result checked: nothing created in, or
// depending on, the real schemas. A restore killed at any point leaves the
// target as it was, plus staging schemas that the next restore drops (under
// an advisory lock, so never those of a restore still running).
//
// Streams older than 1.2 (whose post-data comes only after the rows),
// streams that create extensions or whose statements the rewrite cannot be
// sure of, and RestoreOptions.SingleTransaction (dry runs) restore in ONE
// transaction on one connection: create tables, COPY FROM, re-read and
// verify, constraints and indexes, sequence values, BeforeCommit, COMMIT,
// then ANALYZE.
//
// # What is carried
//
// Schemas (with comments), extensions installed in them (CREATE EXTENSION IF
// NOT EXISTS, version left to the target), enum, domain (defaults, NOT NULL,
// CHECK constraints), range (with multirange name) and composite types; tables
// (unlogged, storage parameters including toast.* and per-table autovacuum
// settings, replica identity) with column types (arrays, inet, cidr,
// timestamptz, bytea, numeric, uuid, jsonb, ranges, user types), collations,
// defaults, NOT NULL, generated columns, identity columns (with their sequence
// options), per-column statistics targets, storage, options and compression;
// CHECK constraints (NOT VALID ones stay NOT VALID); primary keys (composite
// too), unique and exclusion constraints, foreign keys (after every key
// exists); indexes of any method, partial, expression, INCLUDE, with storage
// parameters, CLUSTER ON; sequences with every option, OWNED BY and their
// current value; comments on tables, columns, constraints, indexes,
// sequences, types and domains. All names are quoted; all SQL comes from the
// server's own deparsers (format_type, pg_get_expr, pg_get_constraintdef,
// pg_get_indexdef) with an empty search_path, so it is schema-qualified.
//
// No SQL of a stream is trusted: Verify and Restore parse every pre-data and
// post-data statement with PostgreSQL's grammar (libpg_query as WebAssembly,
// github.com/wasilibs/go-pgquery) before anything runs, and refuse
// (ErrUnsafeSQL, *UnsafeSQLError) any entry that is not exactly one statement
// of the shape its kind allows (sqlcheck.go; docs/bundle-format.md lists
// them): objects in the header's schemas only, the header's tables only,
// built-in, stream-created or allowed-extension types only, expressions of
// constants, columns, casts, operators and a fixed list of side-effect-free
// functions only. The trees of the statements Dump writes for assisted-service's
// schema come from a fast path (sqlfast.go) that builds, for a narrow spelling
// of a few shapes, the tree the grammar gives (tested against it), so most
// processes never compile the grammar; the checks are the same for both.
// Preflight checks a target read-only, for a dry run.
//
// Dump refuses (ErrUnsupportedObject) what it cannot reproduce rather than
// lose it: views, materialized views, functions, procedures, triggers, rules,
// row-level security, partitioned or inherited tables, foreign tables,
// extended statistics, user base types, collations and operators in the dumped
// schemas. Ownership and grants are not carried: restored objects belong to
// the user who restores (source and target roles differ). Planner statistics
// are rebuilt by ANALYZE.
//
// # Stream format (version 3.0)
//
// The stream is an uncompressed POSIX tar (ustar) archive; the caller
// compresses and encrypts it. Members have mode 0600 and time 0, so the same
// database state always yields the same bytes. Members come in this order and
// a reader accepts no other:
//
//	header.json       format "kubectl-assisted-pg-dump", version "MAJOR.MINOR",
//	                  source serverVersion/serverVersionNum, encoding,
//	                  checksum (3.0: the algorithm of summary.json's
//	                  table checksums, "xxh3-128"; before 3.0 absent, and
//	                  they are SHA-256), lastMigration (greatest id of
//	                  assisted-service's
//	                  `migrations` table), the session settings the data was
//	                  written under, schemas, and the table list: for each
//	                  table its schema, name, COPY column list (generated
//	                  columns excluded) and noData (rows deliberately left out).
//	pre-data.json     {"objects": [{"kind", "schema", "name", "sql"}, ...],
//	                  "postData": [...]}: objects are statements in execution
//	                  order: schemas, extensions, types, sequences, tables,
//	                  OWNED BY, comments. postData (1.2) is post-data.json's
//	                  list without its SEQUENCE SET entries, same order, so a
//	                  reader knows each table's keys and indexes before its
//	                  rows; it is checked as post-data with the pre-data, and
//	                  a reader that uses it refuses (ErrCorruptStream) a
//	                  post-data.json that does not repeat exactly these
//	                  entries plus SEQUENCE SET ones.
//	data/NNNN/CCCCCC.copy
//	                  COPY data of table NNNN (1-based position in the
//	                  header's list, zero-padded to 4 digits), in the format
//	                  the header names for the table (2.0: "format":
//	                  "binary", COPY's binary format with its header and
//	                  trailer; otherwise text format), in chunks
//	                  CCCCCC = 000000, 000001, ... of at most 1 MiB; a table's
//	                  data is the concatenation of its chunks (a row may span
//	                  two chunks); an empty table in text format has no
//	                  member.
//	post-data.json    same shape as pre-data: primary key, unique and exclusion
//	                  constraints, indexes, foreign keys, CLUSTER ON, replica
//	                  identity, comments on them, then setval for every
//	                  sequence (read after the data, so never behind it).
//	summary.json      per table: schema, name, rows, dataBytes and checksum
//	                  "xxh3-128:<hex>" (3.0; "sha256:<hex>" before) of its
//	                  COPY data; and total dataBytes. XXH3-128 is the
//	                  xxHash reference's, seed 0, canonical (big-endian)
//	                  form, as `xxhsum -H2` prints it. It detects data lost
//	                  or changed on the way; authenticity comes from the
//	                  bundle's signature and its SHA-256 layer digests.
//
// Data is written under fixed session settings (client_encoding UTF8,
// DateStyle ISO, IntervalStyle postgres, TimeZone UTC, extra_float_digits 3,
// bytea_output hex, standard_conforming_strings on, search_path empty), which
// Restore uses too, so a loaded table re-read with the same COPY hashes to the
// checksum the dump recorded. Before it commits, Restore compares the streamed
// bytes of every table and the server's row counts with summary.json, and,
// when the target runs another PostgreSQL major than the source (or with
// ReadbackAlways), every table re-read from the target as well. In COPY text every
// row ends with a newline (newlines inside values are escaped), so counting
// newlines counts rows; COPY binary data is counted from its framing (a field
// count per tuple, a length per field, a trailer), and must end with its
// trailer.
//
// Versioning: a minor version only adds JSON fields, which older readers
// ignore, or makes explicit a rule writers already followed (1.1: the
// statement rules, applied by readers to every version; 1.2: postData in
// pre-data.json); anything else (a new member, a changed meaning) is a new
// major, and a reader refuses a newer major (ErrUnsupportedFormat). 2.0: a
// table's data may be in binary format, which a 1.x reader would misread.
// 3.0: the table checksums are XXH3-128, named by the header's checksum, which
// a 2.x reader would take for SHA-256 and refuse every table (SHA-256 took
// about 0.4 s of CPU for the bench's 660 MB on each side of a dump and a
// restore, both CPU-bound on 2 cores; XXH3 hashes at memory speed). Readers
// read 1.x, 2.0 and 3.0 streams, and restore 1.0 and 1.1 streams in one
// transaction.
// Anything out of order, unknown, truncated or oversized (metadata members are
// limited to 64 MiB) is ErrCorruptStream; counts or checksums that disagree are
// ErrChecksumMismatch.
package pg
