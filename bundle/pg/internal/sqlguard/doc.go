// Package sqlguard decides whether a database stream's SQL may run: every
// statement of its pre-data and post-data is parsed and checked against the
// shapes a dump writes, before any of them runs on a server.
//
// A Checker, made from the header's schemas and tables (NewChecker), reads
// the entries in order (CheckPreData, CheckPostData) and refuses, with an
// *UnsafeSQLError (errors.Is ErrUnsafeSQL), any entry that is not exactly one
// statement of the kind it claims: objects in the header's schemas only,
// the header's tables only, built-in, stream-created or allowed-extension
// types only, expressions of constants, columns, casts, operators and a
// fixed list of side-effect-free functions only (docs/bundle-format.md
// lists the shapes).
//
// The trees come from PostgreSQL's own grammar (libpg_query as WebAssembly,
// parse.go), or, for the narrow spelling of the statements a dump of
// assisted-service's schema holds, from a fast path (fast.go) that builds
// the same tree without compiling the grammar; the checks are the same for
// both. The one lexer (Lex, lex.go) serves the fast path and the staged
// restore's schema rewrite in bundle/pg.
//
// It must not run SQL, open connections, or know the stream's format beyond
// the entries it is handed: bundle/pg reads the stream and calls it.
package sqlguard
