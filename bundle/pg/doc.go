// Package pg is the database engine of a bundle: it dumps a PostgreSQL
// database into a self-describing byte stream (Dump), checks such a stream
// offline (Verify), and restores it into an empty database, all or nothing
// (Restore), with pg_dump-grade fidelity, using only pgx (no pg_dump binary
// at run time). Preflight checks a target read-only, for a dry run.
//
// docs/bundle-format.md ("database layer", "The dump stream") specifies the
// stream, what it carries and how it is restored (in staging schemas on
// several connections: staged.go and its stage*.go); docs/postgresql.md says
// which PostgreSQL majors meet on node 0 and cluster 0.
//
// No SQL of a stream is trusted: every statement is checked by
// internal/sqlguard before any runs (ErrUnsafeSQL). The engine never prints:
// it reports through its return values, typed errors (ErrCorruptStream,
// ErrChecksumMismatch, ErrUnsupportedObject, ErrTargetNotEmpty, ...), a
// progress callback and the caller's logger.
package pg
