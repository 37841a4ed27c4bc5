package sqlguard

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafeSQL means a statement of the stream's pre-data or post-data is not
// one that Dump writes: another statement kind, more than one statement, a
// function, type, extension or object outside what a table schema needs. No
// SQL from a stream runs before every statement passed this check.
var ErrUnsafeSQL = errors.New("unsafe SQL in the database stream")

// UnsafeSQLError names the refused entry and why.
type UnsafeSQLError struct {
	// Member is pre-data.json, post-data.json or header.json.
	Member string
	// Index is the entry's position in its list, from 1 (0 for the header).
	Index              int
	Kind, Schema, Name string
	Reason             string
}

func (e *UnsafeSQLError) Error() string {
	where := e.Member
	if e.Index > 0 {
		where = fmt.Sprintf("%s entry %d (%s %s)", e.Member, e.Index, e.Kind, qualifiedText(e.Schema, e.Name))
	}
	return fmt.Sprintf("%s: %s: %s; nothing from the bundle was run", ErrUnsafeSQL, where, e.Reason)
}

// Is makes errors.Is(err, ErrUnsafeSQL) true.
func (e *UnsafeSQLError) Is(target error) bool { return target == ErrUnsafeSQL }

func qualifiedText(schema, name string) string {
	if schema == "" || schema == name {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q.%q", schema, name)
}

// Entry kinds and where they may appear.
var (
	preDataKinds = map[string]bool{
		"SCHEMA": true, "COMMENT": true, "EXTENSION": true, "TYPE": true, "SEQUENCE": true,
		"TABLE": true, "TABLE OPTION": true, "CHECK CONSTRAINT": true, "SEQUENCE OWNED BY": true,
	}
	postDataKinds = map[string]bool{
		"CONSTRAINT": true, "FK CONSTRAINT": true, "INDEX": true, "CLUSTER": true,
		"REPLICA IDENTITY": true, "COMMENT": true, "SEQUENCE SET": true,
	}
)

type qname struct{ schema, name string }

// Entry is one statement of a stream's pre-data or post-data list, with
// what the stream says it is: its kind (TABLE, INDEX, SEQUENCE SET, ...)
// and the object it makes.
type Entry struct {
	Kind, Schema, Name, SQL string
}

// Name is a schema-qualified name (a table of the stream's header).
type Name struct {
	Schema, Name string
}

// Checker checks a stream's statements in order, knowing what the header
// declares and what earlier entries created.
type Checker struct {
	schemas      map[string]bool
	headerTables map[qname]bool
	tables       map[qname]bool
	types        map[qname]bool
	sequences    map[qname]bool
	indexes      map[qname]bool
	// extSchemas: the schemas extensions were created in, and which.
	extSchemas map[string][]string
}

// reservedSchema reports a schema name a stream may not use.
func reservedSchema(s string) bool {
	return s == "" || s == "information_schema" || strings.HasPrefix(s, "pg_") || len(s) > 63
}

// NewChecker is the checker of a stream whose header (the member named
// header) lists schemas and tables: a schema that is reserved (pg_*,
// information_schema) or a table outside the schemas is refused here.
func NewChecker(header string, schemas []string, tables []Name) (*Checker, error) {
	c := &Checker{
		schemas: map[string]bool{}, headerTables: map[qname]bool{}, tables: map[qname]bool{}, types: map[qname]bool{},
		sequences: map[qname]bool{}, indexes: map[qname]bool{}, extSchemas: map[string][]string{},
	}
	bad := func(format string, args ...any) error {
		return &UnsafeSQLError{Member: header, Reason: fmt.Sprintf(format, args...)}
	}
	for _, s := range schemas {
		if reservedSchema(s) {
			return nil, bad("schema %q is reserved or invalid", s)
		}
		c.schemas[s] = true
	}
	for _, t := range tables {
		if !c.schemas[t.Schema] {
			return nil, bad("table %s is in schema %q, which the header does not list", qualifiedText(t.Schema, t.Name), t.Schema)
		}
		if len(t.Name) > 63 {
			return nil, bad("table name %q is longer than 63 bytes", t.Name)
		}
		c.headerTables[qname{t.Schema, t.Name}] = true
	}
	return c, nil
}

// CheckPreData checks the pre-data list (the member named member), in
// order: each entry one statement of a kind pre-data may hold, about the
// stream's own objects; and every table the header lists created by one.
func (c *Checker) CheckPreData(member string, entries []Entry) error {
	return c.checkList(member, preDataKinds, entries, true)
}

// CheckPostData checks a post-data list (the member named member), after
// the pre-data: keys, indexes, foreign keys, comments and sequence values
// of the stream's own tables and sequences.
func (c *Checker) CheckPostData(member string, entries []Entry) error {
	return c.checkList(member, postDataKinds, entries, false)
}

func (c *Checker) checkList(member string, kinds map[string]bool, objs []Entry, pre bool) error {
	for i, o := range objs {
		fail := func(err error) error {
			return &UnsafeSQLError{Member: member, Index: i + 1, Kind: o.Kind, Schema: o.Schema, Name: o.Name, Reason: err.Error()}
		}
		if !kinds[o.Kind] {
			return fail(fmt.Errorf("%q entries are not allowed in %s", o.Kind, member))
		}
		stmt, err := parseOne(o.SQL, func(typ string) error { return entryHolds(o.Kind, typ) })
		if err != nil {
			return fail(err)
		}
		if err := c.checkStatement(o, stmt); err != nil {
			return fail(err)
		}
	}
	if pre {
		for t := range c.headerTables {
			if !c.tables[t] {
				return &UnsafeSQLError{Member: member, Reason: fmt.Sprintf("the header lists table %s but no entry creates it", qualifiedText(t.schema, t.name))}
			}
		}
	}
	return nil
}

// checkStatement checks one statement against its entry's kind.
func (c *Checker) checkStatement(o Entry, stmt node) error {
	typ, body, ok := unwrap(stmt)
	if !ok {
		return errors.New("the statement cannot be parsed")
	}
	if err := entryHolds(o.Kind, typ); err != nil {
		return err
	}
	switch o.Kind {
	case "SCHEMA":
		return c.createSchema(o, body)
	case "EXTENSION":
		return c.createExtension(o, body)
	case "TYPE":
		return c.typeStatement(o, typ, body)
	case "SEQUENCE":
		return c.createSequence(o, body)
	case "TABLE":
		return c.createTable(o, body)
	case "TABLE OPTION", "CHECK CONSTRAINT", "CONSTRAINT", "FK CONSTRAINT", "CLUSTER", "REPLICA IDENTITY":
		return c.alterTable(o, body)
	case "SEQUENCE OWNED BY":
		return c.ownedBy(body)
	case "COMMENT":
		return c.comment(body)
	case "INDEX":
		return c.createIndex(o, body)
	case "SEQUENCE SET":
		return c.setval(body)
	}
	return fmt.Errorf("unknown entry kind %q", o.Kind)
}

// entryStatements are the statement types (parse-tree node names) each kind
// of entry may hold.
var entryStatements = map[string][]string{
	"SCHEMA":            {"CreateSchemaStmt"},
	"EXTENSION":         {"CreateExtensionStmt"},
	"TYPE":              {"CreateEnumStmt", "CreateDomainStmt", "CreateRangeStmt", "CompositeTypeStmt", "AlterDomainStmt", "CommentStmt"},
	"SEQUENCE":          {"CreateSeqStmt"},
	"TABLE":             {"CreateStmt"},
	"TABLE OPTION":      {"AlterTableStmt"},
	"CHECK CONSTRAINT":  {"AlterTableStmt"},
	"CONSTRAINT":        {"AlterTableStmt"},
	"FK CONSTRAINT":     {"AlterTableStmt"},
	"CLUSTER":           {"AlterTableStmt"},
	"REPLICA IDENTITY":  {"AlterTableStmt"},
	"SEQUENCE OWNED BY": {"AlterSeqStmt"},
	"COMMENT":           {"CommentStmt"},
	"INDEX":             {"IndexStmt"},
	"SEQUENCE SET":      {"SelectStmt"},
}

// entryHolds refuses a statement of type typ in an entry of kind.
func entryHolds(kind, typ string) error {
	types, ok := entryStatements[kind]
	if !ok {
		return fmt.Errorf("unknown entry kind %q", kind)
	}
	for _, t := range types {
		if typ == t {
			return nil
		}
	}
	return fmt.Errorf("a %s statement is not allowed in a %q entry", statementName(typ), kind)
}

// statementName turns a parse node name into words for messages:
// CreateRoleStmt → CREATE ROLE.
func statementName(typ string) string {
	t := strings.TrimSuffix(typ, "Stmt")
	var b strings.Builder
	for i, r := range t {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// matches refuses a statement whose object is not the entry's.
func matches(o Entry, schema, name string) error {
	if o.Schema != schema || o.Name != name {
		return fmt.Errorf("the statement is about %s, the entry names %s", qualifiedText(schema, name), qualifiedText(o.Schema, o.Name))
	}
	return nil
}
