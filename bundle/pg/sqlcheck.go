package pg

import (
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqlguard"
)

// No SQL of a stream is trusted: its statements are checked by
// internal/sqlguard before any runs. This file is the stream's side of it.

// ErrUnsafeSQL means a statement of the stream's pre-data or post-data is not
// one that Dump writes: another statement kind, more than one statement, a
// function, type, extension or object outside what a table schema needs. No
// SQL from a stream runs before every statement passed this check.
var ErrUnsafeSQL = sqlguard.ErrUnsafeSQL

// UnsafeSQLError names the refused entry and why; errors.Is(err,
// ErrUnsafeSQL) holds for it.
type UnsafeSQLError = sqlguard.UnsafeSQLError

// ddlChecker checks a stream's lists, in order, against its header.
type ddlChecker struct{ c *sqlguard.Checker }

func newDDLChecker(h *streamHeader) (*ddlChecker, error) {
	tables := make([]sqlguard.Name, len(h.Tables))
	for i, t := range h.Tables {
		tables[i] = sqlguard.Name{Schema: t.Schema, Name: t.Name}
	}
	c, err := sqlguard.NewChecker(memberHeader, h.Schemas, tables)
	if err != nil {
		return nil, err
	}
	return &ddlChecker{c: c}, nil
}

// checkList checks the pre-data list (member memberPreData) or a post-data
// list (any other member: post-data.json, or pre-data.json's postData).
func (c *ddlChecker) checkList(member string, objs []object) error {
	es := make([]sqlguard.Entry, len(objs))
	for i, o := range objs {
		es[i] = sqlguard.Entry(o)
	}
	if member == memberPreData {
		return c.c.CheckPreData(member, es)
	}
	return c.c.CheckPostData(member, es)
}

// ParserStats reports how many statements this process has parsed with the
// fast path and how many with PostgreSQL's grammar (whose first use compiles
// it): diagnostics for the test module, which checks that a dump of
// assisted-service's schema, taken from a real server, never compiles the
// grammar.
func ParserStats() (fast, grammar int64) { return sqlguard.Stats() }

// NonUnreservedKeywords returns the words the fast statement parser never
// takes as bare names: the test module compares them with pg_get_keywords()
// of every PostgreSQL major it runs.
func NonUnreservedKeywords() []string { return sqlguard.NonUnreservedKeywords() }
