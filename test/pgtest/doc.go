// Package pgtest holds the integration tests of the PostgreSQL dump and restore
// engine (bundle/pg) against real PostgreSQL servers: round-trip fidelity
// checked with pg_dump, restores into a second server, and failure safety
// (truncated streams, killed servers and connections, cancelled contexts).
package pgtest
