package pg

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

// allowedExtensions are the extensions a stream may create (IF NOT EXISTS, in
// one of its schemas): contrib modules that add data types, operators and
// index support and nothing that reaches files, the network, other databases
// or procedural languages. For each, the types and functions that table
// definitions may name qualified by the extension's schema.
var allowedExtensions = map[string]struct{ types, funcs []string }{
	"citext":     {types: []string{"citext"}},
	"hstore":     {types: []string{"hstore"}},
	"ltree":      {types: []string{"ltree", "lquery", "ltxtquery"}},
	"cube":       {types: []string{"cube"}},
	"pg_trgm":    {},
	"btree_gin":  {},
	"btree_gist": {},
	"pgcrypto":   {funcs: []string{"gen_random_uuid"}},
	"uuid-ossp":  {funcs: []string{"uuid_generate_v1", "uuid_generate_v1mc", "uuid_generate_v4"}},
}

// builtinTypes are the pg_catalog types a column, domain, cast or sequence may
// use (names as the parser gives them: integer is int4).
var builtinTypes = setOf(
	"bool", "bytea", "char", "int8", "int2", "int4", "text", "oid", "json", "xml", "point", "lseg",
	"path", "box", "polygon", "line", "cidr", "float4", "float8", "circle", "macaddr8", "money",
	"macaddr", "inet", "bpchar", "varchar", "date", "time", "timestamp", "timestamptz", "interval",
	"timetz", "bit", "varbit", "numeric", "uuid", "tsvector", "tsquery", "jsonb", "jsonpath",
	"int4range", "numrange", "tsrange", "tstzrange", "daterange", "int8range",
	"int4multirange", "nummultirange", "tsmultirange", "tstzmultirange", "datemultirange", "int8multirange",
	"pg_lsn", "regclass", "regconfig", "name",
	// spelled out by the parser as written
	"boolean", "integer", "smallint", "bigint", "real", "decimal", "float",
)

// builtinFuncs are the pg_catalog functions that defaults, CHECK
// constraints, generated columns and index expressions may call: pure
// computations on their arguments, the clock, nextval. Nothing that reads
// files or other tables, runs SQL, changes settings or signals backends.
var builtinFuncs = setOf(
	"now", "nextval", "length", "char_length", "character_length", "octet_length", "bit_length",
	"lower", "upper", "btrim", "ltrim", "rtrim", "substr", "substring", "left", "right", "abs",
	"gen_random_uuid", "date_trunc", "date_part", "extract", "timezone", "clock_timestamp",
	"statement_timestamp", "transaction_timestamp", "array_length", "array_ndims", "cardinality",
	"jsonb_typeof", "json_typeof", "to_tsvector", "isempty", "lower_inc", "upper_inc", "lower_inf",
	"upper_inf", "position", "md5", "similar_to_escape", "like_escape",
)

// rangeFuncs are the built-in functions a range type may name as its
// canonical or subtype_diff function.
var rangeFuncs = setOf(
	"float8mi", "int4range_subdiff", "int8range_subdiff", "numrange_subdiff", "daterange_subdiff",
	"tsrange_subdiff", "tstzrange_subdiff", "time_subdiff", "timetz_subdiff", "interval_mi",
	"int4range_canonical", "int8range_canonical", "daterange_canonical",
)

var indexMethods = setOf("btree", "hash", "gist", "gin", "brin", "spgist")

// operatorName reports whether s is an operator made of operator characters
// only, 1 to 63 of them (NAMEDATALEN-1; a loop, not a regular expression with
// {1,63}, whose compilation cost every start of the binary ~10M instructions).
func operatorName(s string) bool {
	if len(s) < 1 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isOpByte(s[i]) {
			return false
		}
	}
	return true
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

type qname struct{ schema, name string }

// ddlChecker checks a stream's statements in order, knowing what the header
// declares and what earlier entries created.
type ddlChecker struct {
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

func newDDLChecker(h *streamHeader) (*ddlChecker, error) {
	c := &ddlChecker{
		schemas: map[string]bool{}, headerTables: map[qname]bool{}, tables: map[qname]bool{}, types: map[qname]bool{},
		sequences: map[qname]bool{}, indexes: map[qname]bool{}, extSchemas: map[string][]string{},
	}
	bad := func(format string, args ...any) error {
		return &UnsafeSQLError{Member: memberHeader, Reason: fmt.Sprintf(format, args...)}
	}
	for _, s := range h.Schemas {
		if reservedSchema(s) {
			return nil, bad("schema %q is reserved or invalid", s)
		}
		c.schemas[s] = true
	}
	for _, t := range h.Tables {
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

// checkList checks a pre-data or post-data list.
func (c *ddlChecker) checkList(member string, objs []object) error {
	kinds := preDataKinds
	if member == memberPostData {
		kinds = postDataKinds
	}
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
	if member == memberPreData {
		for t := range c.headerTables {
			if !c.tables[t] {
				return &UnsafeSQLError{Member: member, Reason: fmt.Sprintf("the header lists table %s but no entry creates it", qualifiedText(t.schema, t.name))}
			}
		}
	}
	return nil
}

// checkStatement checks one statement against its entry's kind.
func (c *ddlChecker) checkStatement(o object, stmt node) error {
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
func matches(o object, schema, name string) error {
	if o.Schema != schema || o.Name != name {
		return fmt.Errorf("the statement is about %s, the entry names %s", qualifiedText(schema, name), qualifiedText(o.Schema, o.Name))
	}
	return nil
}

func (c *ddlChecker) createSchema(o object, b node) error {
	if err := only(b, "CREATE SCHEMA", "schemaname"); err != nil {
		return err
	}
	s := str(b, "schemaname")
	if !c.schemas[s] {
		return fmt.Errorf("schema %q is not one the header lists", s)
	}
	return matches(o, s, s)
}

func (c *ddlChecker) createExtension(o object, b node) error {
	if err := only(b, "CREATE EXTENSION", "extname", "if_not_exists", "options"); err != nil {
		return err
	}
	name := str(b, "extname")
	if _, ok := allowedExtensions[name]; !ok {
		return fmt.Errorf("extension %q is not allowed (allowed: the data-type extensions %s)", name, strings.Join(sortedKeys(allowedExtensions), ", "))
	}
	schema := ""
	for _, opt := range list(b, "options") {
		t, d, ok := unwrap(opt)
		if !ok || t != "DefElem" || str(d, "defname") != "schema" || only(d, "extension option", "defname", "arg", "defaction") != nil {
			return errors.New("CREATE EXTENSION takes only WITH SCHEMA")
		}
		s, ok := stringNodes([]any{d["arg"]})
		if !ok {
			return errors.New("bad WITH SCHEMA")
		}
		schema = s[0]
	}
	if !c.schemas[schema] {
		return fmt.Errorf("extension %q must be created in a schema the header lists, not %q", name, schema)
	}
	c.extSchemas[schema] = append(c.extSchemas[schema], name)
	return matches(o, schema, name)
}

// twoPartName reads a [schema, name] list of String nodes in a stream schema.
func (c *ddlChecker) twoPartName(items []any, what string) (qname, error) {
	s, ok := stringNodes(items)
	if !ok || len(s) != 2 {
		return qname{}, fmt.Errorf("%s must be schema-qualified", what)
	}
	if !c.schemas[s[0]] {
		return qname{}, fmt.Errorf("%s %s is in schema %q, which the header does not list", what, qualifiedText(s[0], s[1]), s[0])
	}
	return qname{s[0], s[1]}, nil
}

func (c *ddlChecker) typeStatement(o object, typ string, b node) error {
	var q qname
	var err error
	switch typ {
	case "CommentStmt":
		return c.comment(b)
	case "CreateEnumStmt":
		if err := only(b, "CREATE TYPE AS ENUM", "typeName", "vals"); err != nil {
			return err
		}
		if q, err = c.twoPartName(list(b, "typeName"), "type"); err != nil {
			return err
		}
		if _, ok := stringNodes(list(b, "vals")); !ok {
			return errors.New("enum labels must be string constants")
		}
	case "CreateDomainStmt":
		if err := only(b, "CREATE DOMAIN", "domainname", "typeName", "collClause", "constraints"); err != nil {
			return err
		}
		if q, err = c.twoPartName(list(b, "domainname"), "domain"); err != nil {
			return err
		}
		if err := c.typeName(obj(b, "typeName")); err != nil {
			return err
		}
		if cc := obj(b, "collClause"); cc != nil {
			if err := c.collation(cc); err != nil {
				return err
			}
		}
		for _, k := range list(b, "constraints") {
			if err := c.constraint(k, "CONSTR_CHECK", "CONSTR_NOTNULL", "CONSTR_NULL", "CONSTR_DEFAULT"); err != nil {
				return err
			}
		}
	case "AlterDomainStmt":
		if err := only(b, "ALTER DOMAIN", "subtype", "typeName", "def", "behavior"); err != nil {
			return err
		}
		if str(b, "subtype") != "C" {
			return errors.New("ALTER DOMAIN may only add a constraint")
		}
		if q, err = c.twoPartName(list(b, "typeName"), "domain"); err != nil {
			return err
		}
		if !c.types[q] {
			return fmt.Errorf("domain %s is not created by the stream", qualifiedText(q.schema, q.name))
		}
		if err := c.constraint(b["def"], "CONSTR_CHECK"); err != nil {
			return err
		}
		return matches(o, q.schema, q.name)
	case "CreateRangeStmt":
		if err := only(b, "CREATE TYPE AS RANGE", "typeName", "params"); err != nil {
			return err
		}
		if q, err = c.twoPartName(list(b, "typeName"), "type"); err != nil {
			return err
		}
		multi := qname{q.schema, strings.Replace(q.name, "range", "multirange", 1)}
		if !strings.Contains(q.name, "range") {
			multi.name = q.name + "_multirange"
		}
		for _, p := range list(b, "params") {
			t, d, ok := unwrap(p)
			if !ok || t != "DefElem" || only(d, "range option", "defname", "arg", "defaction") != nil {
				return errors.New("bad range type option")
			}
			_, arg, ok := unwrap(d["arg"])
			if !ok {
				return errors.New("bad range type option")
			}
			switch str(d, "defname") {
			case "subtype":
				err = c.typeName(arg)
			case "subtype_opclass", "collation":
				err = c.qualifiedLookupName(list(arg, "names"), nil)
			case "canonical", "subtype_diff":
				names, ok := stringNodes(list(arg, "names"))
				if !ok || only(arg, "function name", "names", "typemod") != nil || len(names) == 0 || len(names) > 2 ||
					(len(names) == 2 && names[0] != "pg_catalog") || !rangeFuncs[names[len(names)-1]] {
					err = errors.New("a range type's canonical and subtype_diff functions must be built-in range support functions")
				}
			case "multirange_type_name":
				multi, err = c.twoPartName(list(arg, "names"), "multirange type")
			default:
				err = fmt.Errorf("range type option %q is not allowed", str(d, "defname"))
			}
			if err != nil {
				return err
			}
		}
		c.types[multi] = true
	case "CompositeTypeStmt":
		if err := only(b, "CREATE TYPE AS", "typevar", "coldeflist"); err != nil {
			return err
		}
		if q, err = c.rangeVar(obj(b, "typevar"), false); err != nil {
			return err
		}
		for _, col := range list(b, "coldeflist") {
			t, cd, ok := unwrap(col)
			if !ok || t != "ColumnDef" {
				return errors.New("bad composite type attribute")
			}
			if err := only(cd, "composite type attribute", "colname", "typeName", "collClause", "is_local"); err != nil {
				return err
			}
			if err := c.typeName(obj(cd, "typeName")); err != nil {
				return err
			}
			if cc := obj(cd, "collClause"); cc != nil {
				if err := c.collation(cc); err != nil {
					return err
				}
			}
		}
	}
	if c.types[q] {
		return fmt.Errorf("type %s is created twice", qualifiedText(q.schema, q.name))
	}
	c.types[q] = true
	return matches(o, q.schema, q.name)
}

// rangeVar checks a relation name: schema-qualified, in a stream schema,
// permanent (or unlogged where allowed).
func (c *ddlChecker) rangeVar(rv node, unloggedOK bool) (qname, error) {
	if rv == nil {
		return qname{}, errors.New("no relation name")
	}
	if err := only(rv, "relation name", "schemaname", "relname", "inh", "relpersistence"); err != nil {
		return qname{}, err
	}
	q := qname{str(rv, "schemaname"), str(rv, "relname")}
	if q.schema == "" {
		return qname{}, fmt.Errorf("relation %q must be schema-qualified", q.name)
	}
	if !c.schemas[q.schema] {
		return qname{}, fmt.Errorf("relation %s is in schema %q, which the header does not list", qualifiedText(q.schema, q.name), q.schema)
	}
	switch str(rv, "relpersistence") {
	case "p":
	case "u":
		if !unloggedOK {
			return qname{}, errors.New("UNLOGGED is not allowed here")
		}
	default:
		return qname{}, errors.New("temporary relations are not allowed")
	}
	return q, nil
}

// streamTable checks that rv names a table the stream created.
func (c *ddlChecker) streamTable(rv node) (qname, error) {
	q, err := c.rangeVar(rv, false)
	if err != nil {
		return q, err
	}
	if !c.tables[q] {
		return q, fmt.Errorf("table %s is not created by the stream", qualifiedText(q.schema, q.name))
	}
	return q, nil
}

var seqOptionNames = setOf("as", "start", "increment", "minvalue", "maxvalue", "cache", "cycle")

// seqOptions checks CREATE SEQUENCE and identity options: constants only, a
// built-in integer type, and (identity) the sequence's name.
func (c *ddlChecker) seqOptions(opts []any, identity bool) error {
	for _, o := range opts {
		t, d, ok := unwrap(o)
		if !ok || t != "DefElem" || only(d, "sequence option", "defname", "arg", "defaction") != nil {
			return errors.New("bad sequence option")
		}
		name := str(d, "defname")
		switch {
		case name == "as":
			_, tn, ok := unwrap(d["arg"])
			if !ok {
				return errors.New("bad sequence type")
			}
			if err := c.typeName(tn); err != nil {
				return err
			}
		case name == "sequence_name" && identity:
			_, l, ok := unwrap(d["arg"])
			if !ok {
				return errors.New("bad identity sequence name")
			}
			q, err := c.twoPartName(list(l, "items"), "identity sequence")
			if err != nil {
				return err
			}
			c.sequences[q] = true
		case seqOptionNames[name]:
			if d["arg"] != nil {
				t, _, ok := unwrap(d["arg"])
				if !ok || (t != "Integer" && t != "Float" && t != "Boolean") {
					return fmt.Errorf("sequence option %s must be a constant", name)
				}
			}
		default:
			return fmt.Errorf("sequence option %q is not allowed", name)
		}
	}
	return nil
}

func (c *ddlChecker) createSequence(o object, b node) error {
	if err := only(b, "CREATE SEQUENCE", "sequence", "options"); err != nil {
		return err
	}
	q, err := c.rangeVar(obj(b, "sequence"), true)
	if err != nil {
		return err
	}
	if err := c.seqOptions(list(b, "options"), false); err != nil {
		return err
	}
	c.sequences[q] = true
	return matches(o, q.schema, q.name)
}

func (c *ddlChecker) createTable(o object, b node) error {
	if err := only(b, "CREATE TABLE", "relation", "tableElts", "options", "oncommit"); err != nil {
		return err
	}
	if str(b, "oncommit") != "ONCOMMIT_NOOP" {
		return errors.New("ON COMMIT is not allowed")
	}
	q, err := c.rangeVar(obj(b, "relation"), true)
	if err != nil {
		return err
	}
	if !c.headerTables[q] {
		return fmt.Errorf("table %s is not in the header's table list", qualifiedText(q.schema, q.name))
	}
	if c.tables[q] {
		return fmt.Errorf("table %s is created twice", qualifiedText(q.schema, q.name))
	}
	for _, e := range list(b, "tableElts") {
		t, body, ok := unwrap(e)
		if !ok {
			return errors.New("bad table element")
		}
		switch t {
		case "ColumnDef":
			if err := only(body, "column", "colname", "typeName", "is_local", "constraints", "collClause"); err != nil {
				return err
			}
			if err := c.typeName(obj(body, "typeName")); err != nil {
				return fmt.Errorf("column %q: %w", str(body, "colname"), err)
			}
			if cc := obj(body, "collClause"); cc != nil {
				if err := c.collation(cc); err != nil {
					return err
				}
			}
			for _, k := range list(body, "constraints") {
				if err := c.constraint(k, "CONSTR_NOTNULL", "CONSTR_NULL", "CONSTR_DEFAULT", "CONSTR_IDENTITY", "CONSTR_GENERATED", "CONSTR_CHECK"); err != nil {
					return fmt.Errorf("column %q: %w", str(body, "colname"), err)
				}
			}
		case "Constraint":
			if err := c.constraint(e, "CONSTR_CHECK"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("a %s in CREATE TABLE is not allowed", t)
		}
	}
	if err := c.storageOptions(list(b, "options")); err != nil {
		return err
	}
	c.tables[q] = true
	c.types[q] = true // a table's row type
	return matches(o, q.schema, q.name)
}

// storageOptions checks a WITH (...) list: names with constant values.
func (c *ddlChecker) storageOptions(opts []any) error {
	for _, o := range opts {
		t, d, ok := unwrap(o)
		if !ok || t != "DefElem" || only(d, "storage option", "defname", "arg", "defaction", "defnamespace") != nil {
			return errors.New("bad storage option")
		}
		if ns := str(d, "defnamespace"); ns != "" && ns != "toast" {
			return fmt.Errorf("storage option namespace %q is not allowed", ns)
		}
		if d["arg"] != nil {
			t, _, ok := unwrap(d["arg"])
			if !ok || (t != "String" && t != "Integer" && t != "Float" && t != "Boolean") {
				return fmt.Errorf("storage option %s must be a constant", str(d, "defname"))
			}
		}
	}
	return nil
}

var alterSubtypes = map[string][]string{
	"TABLE OPTION":     {"AT_SetStatistics", "AT_SetStorage", "AT_SetOptions", "AT_SetCompression", "AT_ReplicaIdentity"},
	"CHECK CONSTRAINT": {"AT_AddConstraint"},
	"CONSTRAINT":       {"AT_AddConstraint"},
	"FK CONSTRAINT":    {"AT_AddConstraint"},
	"CLUSTER":          {"AT_ClusterOn"},
	"REPLICA IDENTITY": {"AT_ReplicaIdentity"},
}

var constraintKinds = map[string][]string{
	"CHECK CONSTRAINT": {"CONSTR_CHECK"},
	"CONSTRAINT":       {"CONSTR_PRIMARY", "CONSTR_UNIQUE", "CONSTR_EXCLUSION"},
	"FK CONSTRAINT":    {"CONSTR_FOREIGN"},
}

func (c *ddlChecker) alterTable(o object, b node) error {
	if err := only(b, "ALTER TABLE", "relation", "cmds", "objtype"); err != nil {
		return err
	}
	if str(b, "objtype") != "OBJECT_TABLE" {
		return errors.New("only ALTER TABLE is allowed")
	}
	q, err := c.streamTable(obj(b, "relation"))
	if err != nil {
		return err
	}
	cmds := list(b, "cmds")
	if len(cmds) != 1 {
		return fmt.Errorf("ALTER TABLE with %d actions; exactly one is allowed", len(cmds))
	}
	t, cmd, ok := unwrap(cmds[0])
	if !ok || t != "AlterTableCmd" {
		return errors.New("bad ALTER TABLE action")
	}
	if err := only(cmd, "ALTER TABLE action", "subtype", "name", "def", "behavior", "num"); err != nil {
		return err
	}
	sub := str(cmd, "subtype")
	allowed := false
	for _, s := range alterSubtypes[o.Kind] {
		allowed = allowed || s == sub
	}
	if !allowed {
		return fmt.Errorf("ALTER TABLE %s is not allowed in a %q entry", strings.TrimPrefix(sub, "AT_"), o.Kind)
	}
	if str(cmd, "behavior") != "DROP_RESTRICT" {
		return errors.New("CASCADE is not allowed")
	}
	switch sub {
	case "AT_SetStatistics":
		if t, _, ok := unwrap(cmd["def"]); !ok || t != "Integer" {
			return errors.New("SET STATISTICS takes a number")
		}
	case "AT_SetStorage", "AT_SetCompression":
		if t, _, ok := unwrap(cmd["def"]); !ok || t != "String" {
			return errors.New("bad SET STORAGE or SET COMPRESSION")
		}
	case "AT_SetOptions":
		_, l, ok := unwrap(cmd["def"])
		if !ok {
			return errors.New("bad SET (...)")
		}
		if err := c.storageOptions(list(l, "items")); err != nil {
			return err
		}
	case "AT_ReplicaIdentity":
		t, ri, ok := unwrap(cmd["def"])
		if !ok || t != "ReplicaIdentityStmt" || only(ri, "REPLICA IDENTITY", "identity_type", "name") != nil {
			return errors.New("bad REPLICA IDENTITY")
		}
		idx := str(ri, "identity_type")
		if (o.Kind == "REPLICA IDENTITY") != (idx == "i") || (idx != "i" && idx != "n" && idx != "f" && idx != "d") {
			return errors.New("bad REPLICA IDENTITY")
		}
		if idx == "i" {
			return c.indexOf(q, str(ri, "name"), o)
		}
	case "AT_ClusterOn":
		return c.indexOf(q, str(cmd, "name"), o)
	case "AT_AddConstraint":
		if err := c.constraint(cmd["def"], constraintKinds[o.Kind]...); err != nil {
			return err
		}
		_, k, _ := unwrap(cmd["def"])
		name := str(k, "conname")
		if name == "" {
			return errors.New("the constraint has no name")
		}
		if kind := str(k, "contype"); kind == "CONSTR_PRIMARY" || kind == "CONSTR_UNIQUE" || kind == "CONSTR_EXCLUSION" {
			c.indexes[qname{q.schema, name}] = true
		}
		return matches(o, q.schema, name)
	}
	return nil
}

// indexOf checks that an index named by CLUSTER ON or REPLICA IDENTITY is
// one the stream created in the table's schema.
func (c *ddlChecker) indexOf(table qname, name string, o object) error {
	if !c.indexes[qname{table.schema, name}] {
		return fmt.Errorf("index %q is not created by the stream", name)
	}
	return matches(o, table.schema, name)
}

func (c *ddlChecker) ownedBy(b node) error {
	if err := only(b, "ALTER SEQUENCE", "sequence", "options"); err != nil {
		return err
	}
	q, err := c.rangeVar(obj(b, "sequence"), false)
	if err != nil {
		return err
	}
	if !c.sequences[q] {
		return fmt.Errorf("sequence %s is not created by the stream", qualifiedText(q.schema, q.name))
	}
	opts := list(b, "options")
	if len(opts) != 1 {
		return errors.New("ALTER SEQUENCE may only set OWNED BY")
	}
	t, d, ok := unwrap(opts[0])
	if !ok || t != "DefElem" || str(d, "defname") != "owned_by" || only(d, "OWNED BY", "defname", "arg", "defaction") != nil {
		return errors.New("ALTER SEQUENCE may only set OWNED BY")
	}
	_, l, ok := unwrap(d["arg"])
	if !ok {
		return errors.New("bad OWNED BY")
	}
	names, ok := stringNodes(list(l, "items"))
	if !ok || len(names) != 3 || !c.tables[qname{names[0], names[1]}] {
		return errors.New("OWNED BY must name a column of a table the stream creates")
	}
	return nil
}

var commentObjects = setOf("OBJECT_SCHEMA", "OBJECT_TABLE", "OBJECT_COLUMN", "OBJECT_SEQUENCE", "OBJECT_INDEX",
	"OBJECT_TYPE", "OBJECT_DOMAIN", "OBJECT_TABCONSTRAINT", "OBJECT_DOMCONSTRAINT")

func (c *ddlChecker) comment(b node) error {
	if err := only(b, "COMMENT", "objtype", "object", "comment"); err != nil {
		return err
	}
	kind := str(b, "objtype")
	if !commentObjects[kind] {
		return fmt.Errorf("COMMENT ON %s is not allowed", strings.TrimPrefix(kind, "OBJECT_"))
	}
	t, ob, ok := unwrap(b["object"])
	if !ok {
		return errors.New("bad COMMENT object")
	}
	var schema string
	switch t {
	case "String":
		if kind != "OBJECT_SCHEMA" {
			return errors.New("bad COMMENT object")
		}
		schema = str(ob, "sval")
	case "List":
		items := list(ob, "items")
		if kind == "OBJECT_DOMCONSTRAINT" {
			if len(items) != 2 {
				return errors.New("bad COMMENT object")
			}
			_, tn, ok := unwrap(items[0])
			if !ok {
				return errors.New("bad COMMENT object")
			}
			items = list(tn, "names")
		}
		names, ok := stringNodes(items)
		if !ok || len(names) < 2 {
			return errors.New("COMMENT ON needs a schema-qualified object")
		}
		schema = names[0]
	case "TypeName":
		names, ok := stringNodes(list(ob, "names"))
		if !ok || len(names) != 2 {
			return errors.New("COMMENT ON needs a schema-qualified object")
		}
		schema = names[0]
	default:
		return errors.New("bad COMMENT object")
	}
	if !c.schemas[schema] {
		return fmt.Errorf("COMMENT ON an object in schema %q, which the header does not list", schema)
	}
	return nil
}

func (c *ddlChecker) createIndex(o object, b node) error {
	if err := only(b, "CREATE INDEX", "idxname", "relation", "accessMethod", "indexParams", "indexIncludingParams",
		"options", "whereClause", "unique", "nulls_not_distinct"); err != nil {
		return err
	}
	q, err := c.streamTable(obj(b, "relation"))
	if err != nil {
		return err
	}
	name := str(b, "idxname")
	if name == "" {
		return errors.New("the index has no name")
	}
	if !indexMethods[str(b, "accessMethod")] {
		return fmt.Errorf("index method %q is not allowed", str(b, "accessMethod"))
	}
	for _, key := range []string{"indexParams", "indexIncludingParams"} {
		for _, e := range list(b, key) {
			if err := c.indexElem(e); err != nil {
				return err
			}
		}
	}
	if err := c.storageOptions(list(b, "options")); err != nil {
		return err
	}
	if w := b["whereClause"]; w != nil {
		if err := c.expr(w); err != nil {
			return err
		}
	}
	c.indexes[qname{q.schema, name}] = true
	return matches(o, q.schema, name)
}

func (c *ddlChecker) indexElem(e any) error {
	t, ie, ok := unwrap(e)
	if !ok || t != "IndexElem" {
		return errors.New("bad index element")
	}
	if err := only(ie, "index element", "name", "expr", "collation", "opclass", "opclassopts", "ordering", "nulls_ordering"); err != nil {
		return err
	}
	if x := ie["expr"]; x != nil {
		if err := c.expr(x); err != nil {
			return err
		}
	}
	if coll := list(ie, "collation"); coll != nil {
		if err := c.qualifiedLookupName(coll, nil); err != nil {
			return err
		}
	}
	if oc := list(ie, "opclass"); oc != nil {
		if err := c.qualifiedLookupName(oc, nil); err != nil {
			return err
		}
	}
	return c.storageOptions(list(ie, "opclassopts"))
}

// qualifiedLookupName checks the name of an operator class, collation or
// operator: unqualified (found in pg_catalog, the search path being empty),
// in pg_catalog, or in a schema an allowed extension was created in.
func (c *ddlChecker) qualifiedLookupName(items []any, valid func(string) bool) error {
	names, ok := stringNodes(items)
	if !ok || len(names) == 0 || len(names) > 2 {
		return errors.New("bad name")
	}
	if valid != nil && !valid(names[len(names)-1]) {
		return fmt.Errorf("%q is not a valid name here", names[len(names)-1])
	}
	if len(names) == 2 && names[0] != "pg_catalog" && len(c.extSchemas[names[0]]) == 0 {
		return fmt.Errorf("%s is in schema %q, which is neither pg_catalog nor an extension's", qualifiedText(names[0], names[1]), names[0])
	}
	return nil
}

func (c *ddlChecker) collation(cc node) error {
	if err := only(cc, "COLLATE", "collname", "arg"); err != nil {
		return err
	}
	if cc["arg"] != nil {
		if err := c.expr(cc["arg"]); err != nil {
			return err
		}
	}
	names, ok := stringNodes(list(cc, "collname"))
	if !ok || len(names) == 0 || len(names) > 2 || (len(names) == 2 && names[0] != "pg_catalog") {
		return errors.New("only built-in (pg_catalog) collations are allowed")
	}
	return nil
}

// constraint checks a Constraint node of one of the kinds.
func (c *ddlChecker) constraint(v any, kinds ...string) error {
	t, k, ok := unwrap(v)
	if !ok || t != "Constraint" {
		return errors.New("bad constraint")
	}
	kind := str(k, "contype")
	allowed := false
	for _, x := range kinds {
		allowed = allowed || x == kind
	}
	if !allowed {
		return fmt.Errorf("a %s constraint is not allowed here", strings.TrimPrefix(kind, "CONSTR_"))
	}
	common := []string{"contype", "conname", "deferrable", "initdeferred", "skip_validation", "initially_valid"}
	switch kind {
	case "CONSTR_NULL", "CONSTR_NOTNULL":
		return only(k, "NOT NULL", common...)
	case "CONSTR_DEFAULT", "CONSTR_CHECK":
		if err := only(k, "constraint", append(common, "raw_expr", "is_no_inherit")...); err != nil {
			return err
		}
		return c.expr(k["raw_expr"])
	case "CONSTR_GENERATED":
		if err := only(k, "generated column", append(common, "raw_expr", "generated_when")...); err != nil {
			return err
		}
		return c.expr(k["raw_expr"])
	case "CONSTR_IDENTITY":
		if err := only(k, "identity column", append(common, "generated_when", "options")...); err != nil {
			return err
		}
		return c.seqOptions(list(k, "options"), true)
	case "CONSTR_PRIMARY", "CONSTR_UNIQUE":
		if err := only(k, "key", append(common, "keys", "including", "options", "nulls_not_distinct")...); err != nil {
			return err
		}
		for _, key := range []string{"keys", "including"} {
			if _, ok := stringNodes(list(k, key)); !ok {
				return errors.New("bad key column list")
			}
		}
		return c.storageOptions(list(k, "options"))
	case "CONSTR_EXCLUSION":
		if err := only(k, "exclusion constraint", append(common, "exclusions", "access_method", "where_clause", "including", "options")...); err != nil {
			return err
		}
		if !indexMethods[str(k, "access_method")] {
			return fmt.Errorf("index method %q is not allowed", str(k, "access_method"))
		}
		for _, x := range list(k, "exclusions") {
			_, pair, ok := unwrap(x)
			items := list(pair, "items")
			if !ok || len(items) != 2 {
				return errors.New("bad exclusion element")
			}
			if err := c.indexElem(items[0]); err != nil {
				return err
			}
			_, op, ok := unwrap(items[1])
			if !ok {
				return errors.New("bad exclusion operator")
			}
			if err := c.qualifiedLookupName(list(op, "items"), operatorName); err != nil {
				return err
			}
		}
		if _, ok := stringNodes(list(k, "including")); !ok {
			return errors.New("bad INCLUDE list")
		}
		if w := k["where_clause"]; w != nil {
			if err := c.expr(w); err != nil {
				return err
			}
		}
		return c.storageOptions(list(k, "options"))
	case "CONSTR_FOREIGN":
		if err := only(k, "foreign key", append(common, "pktable", "fk_attrs", "pk_attrs", "fk_matchtype",
			"fk_upd_action", "fk_del_action", "fk_del_set_cols")...); err != nil {
			return err
		}
		if _, err := c.streamTable(obj(k, "pktable")); err != nil {
			return fmt.Errorf("foreign key: %w", err)
		}
		for _, key := range []string{"fk_attrs", "pk_attrs", "fk_del_set_cols"} {
			if _, ok := stringNodes(list(k, key)); !ok {
				return errors.New("bad foreign key column list")
			}
		}
		return nil
	}
	return fmt.Errorf("a %s constraint is not allowed", kind)
}

// typeName checks a type: built in, created earlier by the stream, or
// provided by an allowed extension in the schema it was created in; typmods
// are integer constants.
func (c *ddlChecker) typeName(tn node) error {
	if tn == nil {
		return errors.New("no type")
	}
	if err := only(tn, "type", "names", "typmods", "typemod", "arrayBounds"); err != nil {
		return err
	}
	names, ok := stringNodes(list(tn, "names"))
	if !ok || len(names) == 0 {
		return errors.New("bad type name")
	}
	for _, m := range list(tn, "typmods") {
		t, a, ok := unwrap(m)
		if !ok || t != "A_Const" || only(a, "type modifier", "ival") != nil {
			return fmt.Errorf("type %s: modifiers must be integer constants", strings.Join(names, "."))
		}
	}
	for _, b := range list(tn, "arrayBounds") {
		if _, ok := intNode(b); !ok {
			return errors.New("bad array bounds")
		}
	}
	switch {
	case len(names) == 1 && builtinTypes[names[0]]:
		return nil
	case len(names) == 2 && names[0] == "pg_catalog" && builtinTypes[names[1]]:
		return nil
	case len(names) == 2 && c.types[qname{names[0], names[1]}]:
		return nil
	case len(names) == 2:
		for _, ext := range c.extSchemas[names[0]] {
			for _, t := range allowedExtensions[ext].types {
				if t == names[1] {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("type %s is neither a built-in type nor one the stream creates", strings.Join(quoteAll(names), "."))
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// maxExprDepth bounds how deeply expressions nest.
const maxExprDepth = 200

// expr checks an expression: constants, columns, casts to allowed types,
// operators, boolean logic, CASE, COALESCE, arrays, and calls of allowed
// functions. No sub-query, no other function.
func (c *ddlChecker) expr(v any) error { return c.exprDepth(v, 0) }

func (c *ddlChecker) exprDepth(v any, depth int) error {
	if depth > maxExprDepth {
		return errors.New("the expression nests too deeply")
	}
	t, b, ok := unwrap(v)
	if !ok {
		return errors.New("bad expression")
	}
	sub := func(vs ...any) error {
		for _, x := range vs {
			if x == nil {
				continue
			}
			if err := c.exprDepth(x, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	switch t {
	case "A_Const":
		return only(b, "constant", "ival", "fval", "boolval", "sval", "bsval", "isnull")
	case "ColumnRef":
		if err := only(b, "column reference", "fields"); err != nil {
			return err
		}
		if names, ok := stringNodes(list(b, "fields")); !ok || len(names) != 1 {
			return errors.New("a column reference must be one column name")
		}
		return nil
	case "TypeCast":
		if err := only(b, "cast", "arg", "typeName"); err != nil {
			return err
		}
		if err := c.typeName(obj(b, "typeName")); err != nil {
			return err
		}
		return sub(b["arg"])
	case "CollateClause":
		if err := c.collation(b); err != nil {
			return err
		}
		return nil
	case "A_Expr":
		if err := only(b, "operator expression", "kind", "name", "lexpr", "rexpr"); err != nil {
			return err
		}
		switch str(b, "kind") {
		case "AEXPR_OP", "AEXPR_OP_ANY", "AEXPR_OP_ALL", "AEXPR_DISTINCT", "AEXPR_NOT_DISTINCT", "AEXPR_NULLIF",
			"AEXPR_IN", "AEXPR_LIKE", "AEXPR_ILIKE", "AEXPR_SIMILAR", "AEXPR_BETWEEN", "AEXPR_NOT_BETWEEN",
			"AEXPR_BETWEEN_SYM", "AEXPR_NOT_BETWEEN_SYM":
		default:
			return fmt.Errorf("operator expression %s is not allowed", str(b, "kind"))
		}
		if err := c.qualifiedLookupName(list(b, "name"), func(s string) bool {
			return operatorName(s) || s == "BETWEEN" || s == "NOT BETWEEN" || s == "BETWEEN SYMMETRIC" || s == "NOT BETWEEN SYMMETRIC"
		}); err != nil {
			return fmt.Errorf("operator: %w", err)
		}
		return sub(b["lexpr"], b["rexpr"])
	case "List":
		if err := only(b, "list", "items"); err != nil {
			return err
		}
		return sub(list(b, "items")...)
	case "BoolExpr":
		if err := only(b, "boolean expression", "boolop", "args"); err != nil {
			return err
		}
		return sub(list(b, "args")...)
	case "NullTest":
		if err := only(b, "IS NULL", "arg", "nulltesttype", "argisrow"); err != nil {
			return err
		}
		return sub(b["arg"])
	case "BooleanTest":
		if err := only(b, "IS TRUE", "arg", "booltesttype"); err != nil {
			return err
		}
		return sub(b["arg"])
	case "A_ArrayExpr":
		if err := only(b, "array", "elements"); err != nil {
			return err
		}
		return sub(list(b, "elements")...)
	case "A_Indirection":
		if err := only(b, "subscript", "arg", "indirection"); err != nil {
			return err
		}
		for _, ind := range list(b, "indirection") {
			it, ib, ok := unwrap(ind)
			if !ok || it != "A_Indices" || only(ib, "subscript", "is_slice", "lidx", "uidx") != nil {
				return errors.New("only array subscripts are allowed")
			}
			if err := sub(ib["lidx"], ib["uidx"]); err != nil {
				return err
			}
		}
		return sub(b["arg"])
	case "CaseExpr":
		if err := only(b, "CASE", "arg", "args", "defresult"); err != nil {
			return err
		}
		for _, w := range list(b, "args") {
			wt, wb, ok := unwrap(w)
			if !ok || wt != "CaseWhen" || only(wb, "WHEN", "expr", "result") != nil {
				return errors.New("bad CASE")
			}
			if err := sub(wb["expr"], wb["result"]); err != nil {
				return err
			}
		}
		return sub(b["arg"], b["defresult"])
	case "CoalesceExpr", "MinMaxExpr":
		if err := only(b, "COALESCE", "args", "op"); err != nil {
			return err
		}
		return sub(list(b, "args")...)
	case "SQLValueFunction":
		if err := only(b, "SQL value function", "op", "typmod"); err != nil {
			return err
		}
		switch str(b, "op") {
		case "SVFOP_CURRENT_DATE", "SVFOP_CURRENT_TIME", "SVFOP_CURRENT_TIME_N", "SVFOP_CURRENT_TIMESTAMP",
			"SVFOP_CURRENT_TIMESTAMP_N", "SVFOP_LOCALTIME", "SVFOP_LOCALTIME_N", "SVFOP_LOCALTIMESTAMP", "SVFOP_LOCALTIMESTAMP_N":
			return nil
		}
		return fmt.Errorf("%s is not allowed", str(b, "op"))
	case "FuncCall":
		if err := only(b, "function call", "funcname", "args", "funcformat"); err != nil {
			return err
		}
		names, ok := stringNodes(list(b, "funcname"))
		if !ok || !c.allowedFunc(names) {
			return fmt.Errorf("function %s is not allowed", strings.Join(quoteAll(names), "."))
		}
		return sub(list(b, "args")...)
	}
	return fmt.Errorf("%s is not allowed in an expression", statementName(t))
}

func (c *ddlChecker) allowedFunc(names []string) bool {
	switch {
	case len(names) == 1:
		return builtinFuncs[names[0]]
	case len(names) == 2 && names[0] == "pg_catalog":
		return builtinFuncs[names[1]]
	case len(names) == 2:
		for _, ext := range c.extSchemas[names[0]] {
			for _, f := range allowedExtensions[ext].funcs {
				if f == names[1] {
					return true
				}
			}
		}
	}
	return false
}

// setval checks SELECT pg_catalog.setval('<sequence>', <integer>, <boolean>)
// for a sequence the stream created.
func (c *ddlChecker) setval(b node) error {
	if err := only(b, "SELECT", "targetList", "limitOption", "op"); err != nil {
		return errors.New("only SELECT pg_catalog.setval(sequence, value, is_called) is allowed")
	}
	if str(b, "op") != "SETOP_NONE" || str(b, "limitOption") != "LIMIT_OPTION_DEFAULT" {
		return errors.New("only SELECT pg_catalog.setval(sequence, value, is_called) is allowed")
	}
	targets := list(b, "targetList")
	bad := errors.New("only SELECT pg_catalog.setval(sequence, value, is_called) is allowed")
	if len(targets) != 1 {
		return bad
	}
	t, rt, ok := unwrap(targets[0])
	if !ok || t != "ResTarget" || only(rt, "target", "val") != nil {
		return bad
	}
	t, fc, ok := unwrap(rt["val"])
	if !ok || t != "FuncCall" || only(fc, "function call", "funcname", "args", "funcformat") != nil {
		return bad
	}
	names, ok := stringNodes(list(fc, "funcname"))
	args := list(fc, "args")
	if !ok || len(names) != 2 || names[0] != "pg_catalog" || names[1] != "setval" || len(args) != 3 {
		return bad
	}
	consts := make([]node, 3)
	for i, a := range args {
		t, ac, ok := unwrap(a)
		if !ok || t != "A_Const" {
			return bad
		}
		consts[i] = ac
	}
	seq, ok := obj(consts[0], "sval")["sval"].(string)
	if !ok || only(consts[0], "constant", "sval") != nil {
		return bad
	}
	q, ok := parseQualified(seq)
	if !ok || !c.sequences[q] {
		return fmt.Errorf("setval of %q, which is not a sequence the stream creates", seq)
	}
	if only(consts[1], "constant", "ival", "fval") != nil || only(consts[2], "constant", "boolval") != nil || consts[2]["boolval"] == nil {
		return bad
	}
	return nil
}

// parseQualified reads "schema"."name" as ident() writes it.
func parseQualified(s string) (qname, bool) {
	var parts []string
	for len(s) > 0 {
		if s[0] != '"' {
			return qname{}, false
		}
		var b strings.Builder
		i := 1
		for {
			if i >= len(s) {
				return qname{}, false
			}
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				break
			}
			b.WriteByte(s[i])
			i++
		}
		parts = append(parts, b.String())
		s = s[i+1:]
		if len(s) > 0 {
			if s[0] != '.' {
				return qname{}, false
			}
			s = s[1:]
			if s == "" {
				return qname{}, false
			}
		}
	}
	if len(parts) != 2 {
		return qname{}, false
	}
	return qname{parts[0], parts[1]}, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
