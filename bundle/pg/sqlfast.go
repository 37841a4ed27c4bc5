package pg

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A fast path for the statement check. PostgreSQL's grammar as WebAssembly
// (sqlparse.go) costs about 1.5 s of CPU and 250 MB of memory to compile in
// every process, whatever the number of statements; most streams hold only
// the few dozen statements of assisted-service's schema, in the handful of
// shapes Dump writes for it.
//
// fastParse recognises exactly those shapes, in a deliberately narrow
// spelling, and builds the parse tree that PostgreSQL's parser builds for
// them (without "location" fields, which the checker ignores). The tree then
// goes through the same checker as a tree from the real parser: the fast path
// decides nothing about safety, it only saves the compilation. Whatever it
// does not recognise exactly (another statement, another spelling, a comment,
// a newline, an escape, a keyword where a name is expected, an operator it
// does not know, an ambiguous precedence) it leaves to the real parser.
// Beside it, fastStatementType names a statement's type from its leading
// words alone, for the few beginnings that fix it, so that the checker can
// refuse a type the entry cannot hold; it too decides nothing itself.
//
// That the trees are the real parser's is tested, not assumed:
// TestFastParse_SameTreeAsPostgreSQL and FuzzFastParse compare every tree
// fastParse builds with libpg_query's, and the keyword list below is checked
// against pg_get_keywords() of every PostgreSQL major the suite runs
// (test/pgtest).
//
// The narrow spelling:
//   - tokens are separated by single spaces or by punctuation; no other
//     white space, no comments, no semicolon;
//   - keywords are upper case (CREATE, TABLE, ...), except the constants
//     true and false and the words of type names, which are lower case as
//     format_type writes them;
//   - names are double-quoted (any content but control characters, at most
//     63 bytes, "" for a quote) or bare: lower-case letters, digits and _,
//     not a PostgreSQL keyword other than an unreserved one (such words
//     mean the same as a quoted name wherever a name stands);
//   - the text is valid UTF-8;
//   - string constants are '...' with '' for a quote and no backslash or
//     control character, never directly after a word (no E'', B'', X'',
//     typed literals);
//   - numbers are plain decimal: digits, optionally a point and digits, no
//     leading zero, no exponent, not followed by a letter;
//   - in expressions every operator's operands are single terms (a
//     constant, a name, a call, an array, a cast or a parenthesised
//     expression), as pg_get_expr writes them, so precedence never decides
//     anything; AND and OR chains are of one operator.

// nonUnreservedKeywords are the words PostgreSQL 12-17 list in
// pg_get_keywords() with a category other than unreserved (reserved, column
// name, type or function name): a bare one is not a plain name everywhere.
var nonUnreservedKeywords = setOf(
	// reserved
	"all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case", "cast",
	"check", "collate", "column", "constraint", "create", "current_catalog", "current_date", "current_role",
	"current_time", "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do",
	"else", "end", "except", "false", "fetch", "for", "foreign", "from", "grant", "group", "having", "in",
	"initially", "intersect", "into", "lateral", "leading", "limit", "localtime", "localtimestamp", "not",
	"null", "offset", "on", "only", "or", "order", "placing", "primary", "references", "returning", "select",
	"session_user", "some", "symmetric", "system_user", "table", "then", "to", "trailing", "true", "union",
	"unique", "user", "using", "variadic", "when", "where", "window", "with",
	// type or function name
	"authorization", "binary", "collation", "concurrently", "cross", "current_schema", "freeze", "full",
	"ilike", "inner", "is", "isnull", "join", "left", "like", "natural", "notnull", "outer", "overlaps",
	"right", "similar", "tablesample", "verbose",
	// column name
	"between", "bigint", "bit", "boolean", "char", "character", "coalesce", "dec", "decimal", "exists",
	"extract", "float", "greatest", "grouping", "inout", "int", "integer", "interval", "json", "json_array",
	"json_arrayagg", "json_exists", "json_object", "json_objectagg", "json_query", "json_scalar",
	"json_serialize", "json_table", "json_value", "least", "merge_action", "national", "nchar", "none",
	"normalize", "nullif", "numeric", "out", "overlay", "position", "precision", "real", "row", "setof",
	"smallint", "substring", "time", "timestamp", "treat", "trim", "values", "varchar", "xmlattributes",
	"xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot",
	"xmlserialize", "xmltable",
)

// NonUnreservedKeywords returns the words the fast statement parser never
// takes as bare names (test/pgtest compares them with pg_get_keywords()).
func NonUnreservedKeywords() []string { return sortedKeys(nonUnreservedKeywords) }

type fastTokKind int

const (
	tkWord   fastTokKind = iota // a bare word, as written
	tkQuoted                    // a double-quoted name, unescaped
	tkString                    // a string constant, unescaped
	tkNumber                    // digits, optionally with a point
	tkOp                        // an operator
	tkPunct                     // ( ) , . [ ]
)

type fastTok struct {
	kind fastTokKind
	text string
}

const maxFastTokens = 1 << 16

// fastLex splits sql into tokens, or fails on anything outside the narrow
// spelling.
func fastLex(sql string) ([]fastTok, bool) {
	var toks []fastTok
	i := 0
	for i < len(sql) {
		if len(toks) > maxFastTokens {
			return nil, false
		}
		c := sql[i]
		switch {
		case c == ' ':
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(sql) {
					return nil, false
				}
				if sql[j] < 0x20 || sql[j] == 0x7f {
					return nil, false
				}
				if sql[j] == '"' {
					if j+1 < len(sql) && sql[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sql[j])
				j++
			}
			if b.Len() == 0 || b.Len() > 63 {
				return nil, false
			}
			toks = append(toks, fastTok{tkQuoted, b.String()})
			i = j + 1
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(sql) {
					return nil, false
				}
				if sql[j] < 0x20 || sql[j] == 0x7f || sql[j] == '\\' {
					return nil, false
				}
				if sql[j] == '\'' {
					if j+1 < len(sql) && sql[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sql[j])
				j++
			}
			toks = append(toks, fastTok{tkString, b.String()})
			i = j + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			if sql[i] == '0' && j-i > 1 {
				return nil, false
			}
			if j < len(sql) && sql[j] == '.' {
				k := j + 1
				for k < len(sql) && sql[k] >= '0' && sql[k] <= '9' {
					k++
				}
				if k == j+1 {
					return nil, false
				}
				j = k
			}
			if j < len(sql) && (isWordByte(sql[j]) || sql[j] == '.' || sql[j] == '$' || sql[j] == '\'' || sql[j] == '"') {
				return nil, false
			}
			toks = append(toks, fastTok{tkNumber, sql[i:j]})
			i = j
		case isWordStart(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			if j < len(sql) && (sql[j] == '$' || sql[j] == '\'' || sql[j] == '"' || sql[j] >= 0x80) {
				return nil, false
			}
			w := sql[i:j]
			if !allLower(w) && !allUpper(w) {
				return nil, false
			}
			toks = append(toks, fastTok{tkWord, w})
			i = j
		case c == ':':
			if i+1 < len(sql) && sql[i+1] == ':' && (i+2 >= len(sql) || !isOpByte(sql[i+2]) && sql[i+2] != ':') {
				toks = append(toks, fastTok{tkOp, "::"})
				i += 2
				continue
			}
			return nil, false
		case isOpByte(c):
			j := i
			for j < len(sql) && isOpByte(sql[j]) {
				j++
			}
			op := sql[i:j]
			switch op {
			case "=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "||":
			default:
				return nil, false
			}
			toks = append(toks, fastTok{tkOp, op})
			i = j
		case c == '(' || c == ')' || c == ',' || c == '.' || c == '[' || c == ']':
			toks = append(toks, fastTok{tkPunct, string(c)})
			i++
		default:
			return nil, false
		}
	}
	return toks, true
}

func isWordStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isWordByte(c byte) bool  { return isWordStart(c) || c >= '0' && c <= '9' }
func isOpByte(c byte) bool    { return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0 }

func allLower(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 'A' && w[i] <= 'Z' {
			return false
		}
	}
	return true
}

func allUpper(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 'a' && w[i] <= 'z' {
			return false
		}
	}
	return true
}

// errFast ends a fast parse that met something outside the narrow spelling.
type errFast struct{}

// fastParser walks the tokens; every method panics with errFast when the
// input is not one it recognises, and fastParse recovers.
type fastParser struct {
	toks  []fastTok
	pos   int
	depth int
}

// fastParse returns the statement's parse tree as a node wrapper, or false.
func fastParse(sql string) (stmt node, ok bool) {
	return runFast(sql, func(p *fastParser) node {
		stmt := p.statement()
		if p.pos != len(p.toks) {
			p.fail()
		}
		return stmt
	})
}

// runFast runs read over sql's tokens; ok is false when the text is outside
// the narrow spelling or read fails on it.
func runFast[T any](sql string, read func(p *fastParser) T) (out T, ok bool) {
	if !utf8.ValidString(sql) {
		return out, false
	}
	toks, ok := fastLex(sql)
	if !ok || len(toks) == 0 {
		return out, false
	}
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(errFast); !is {
				panic(r)
			}
			var zero T
			out, ok = zero, false
		}
	}()
	return read(&fastParser{toks: toks}), true
}

func (p *fastParser) fail() { panic(errFast{}) }

func (p *fastParser) peek() fastTok {
	if p.pos >= len(p.toks) {
		return fastTok{kind: -1}
	}
	return p.toks[p.pos]
}

func (p *fastParser) peekAt(n int) fastTok {
	if p.pos+n >= len(p.toks) {
		return fastTok{kind: -1}
	}
	return p.toks[p.pos+n]
}

func (p *fastParser) next() fastTok {
	t := p.peek()
	if t.kind < 0 {
		p.fail()
	}
	p.pos++
	return t
}

// is reports whether the next token is the upper-case keyword, punctuation
// or operator text.
func (p *fastParser) is(text string) bool {
	t := p.peek()
	return (t.kind == tkWord || t.kind == tkPunct || t.kind == tkOp) && t.text == text
}

func (p *fastParser) accept(text string) bool {
	if p.is(text) {
		p.pos++
		return true
	}
	return false
}

func (p *fastParser) expect(words ...string) {
	for _, w := range words {
		if !p.accept(w) {
			p.fail()
		}
	}
}

// name reads a quoted name or a bare one that is a plain name.
func (p *fastParser) name() string {
	t := p.next()
	switch t.kind {
	case tkQuoted:
		return t.text
	case tkWord:
		if allLower(t.text) && !nonUnreservedKeywords[t.text] && len(t.text) <= 63 {
			return t.text
		}
	}
	p.fail()
	return ""
}

// list reads items separated by commas up to the closing ")"; the caller
// has read the "(".
func (p *fastParser) list(item func()) {
	for {
		item()
		if p.accept(")") {
			return
		}
		p.expect(",")
	}
}

func (p *fastParser) isName() bool {
	t := p.peek()
	return t.kind == tkQuoted || t.kind == tkWord && allLower(t.text) && !nonUnreservedKeywords[t.text]
}

// qualifiedName reads schema.name.
func (p *fastParser) qualifiedName() (string, string) {
	s := p.name()
	p.expect(".")
	return s, p.name()
}

func fnode(typ string, body node) node { return node{typ: body} }

func fstring(s string) node { return fnode("String", node{"sval": s}) }

func fstrings(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = fstring(s)
	}
	return out
}

func rangeVarNode(schema, name string, inh bool, persistence string) node {
	rv := node{"schemaname": schema, "relname": name, "relpersistence": persistence}
	if inh {
		rv["inh"] = true
	}
	return rv
}

func (p *fastParser) statement() node {
	switch {
	case p.is("CREATE"):
		p.next()
		switch {
		case p.accept("SCHEMA"):
			return fnode("CreateSchemaStmt", node{"schemaname": p.name()})
		case p.is("UNLOGGED") || p.is("SEQUENCE") || p.is("TABLE"):
			persistence := "p"
			if p.accept("UNLOGGED") {
				persistence = "u"
			}
			if p.accept("SEQUENCE") {
				return p.createSequence(persistence)
			}
			p.expect("TABLE")
			return p.createTable(persistence)
		case p.is("UNIQUE") || p.is("INDEX"):
			return p.createIndex()
		case p.accept("EXTENSION"):
			return p.createExtension()
		}
	case p.is("ALTER"):
		p.next()
		if p.accept("SEQUENCE") {
			return p.ownedBy()
		}
		p.expect("TABLE")
		return p.alterTableAddConstraint()
	case p.accept("SELECT"):
		return p.selectCall()
	case p.is("COMMENT"):
		return p.comment()
	}
	p.fail()
	return nil
}

// comment reads COMMENT ON what IS 'text' | NULL, for the objects Dump
// comments on: SCHEMA s, TABLE|SEQUENCE|INDEX s.n, COLUMN s.t.c and
// CONSTRAINT c ON s.t.
func (p *fastParser) comment() node {
	p.expect("COMMENT", "ON")
	b := node{}
	switch {
	case p.is("SCHEMA") || p.is("ROLE"):
		b["objtype"] = "OBJECT_" + p.next().text
		b["object"] = fstring(p.name())
	case p.is("TABLE") || p.is("SEQUENCE") || p.is("INDEX"):
		b["objtype"] = "OBJECT_" + p.next().text
		s, n := p.qualifiedName()
		b["object"] = fnode("List", node{"items": fstrings(s, n)})
	case p.accept("COLUMN"):
		s, t := p.qualifiedName()
		p.expect(".")
		b["objtype"], b["object"] = "OBJECT_COLUMN", fnode("List", node{"items": fstrings(s, t, p.name())})
	case p.accept("CONSTRAINT"):
		c := p.name()
		p.expect("ON")
		s, t := p.qualifiedName()
		b["objtype"], b["object"] = "OBJECT_TABCONSTRAINT", fnode("List", node{"items": fstrings(s, t, c)})
	default:
		p.fail()
	}
	p.expect("IS")
	if !p.accept("NULL") {
		t := p.next()
		if t.kind != tkString {
			p.fail()
		}
		b["comment"] = t.text
	}
	return fnode("CommentStmt", b)
}

// signedNumber reads a number with an optional minus, as the grammar's
// NumericOnly makes it: an Integer node when it fits 32 bits, else a Float
// with the text.
func (p *fastParser) signedNumber() node {
	neg := p.accept("-")
	t := p.next()
	if t.kind != tkNumber {
		p.fail()
	}
	text := t.text
	if neg {
		text = "-" + text
	}
	if !strings.Contains(t.text, ".") {
		if v, err := strconv.ParseInt(t.text, 10, 32); err == nil {
			if neg {
				v = -v
			}
			if v == 0 {
				return fnode("Integer", node{})
			}
			return fnode("Integer", node{"ival": json.Number(strconv.FormatInt(v, 10))})
		}
	}
	return fnode("Float", node{"fval": text})
}

func defElem(name string, arg any) node {
	d := node{"defname": name, "defaction": "DEFELEM_UNSPEC"}
	if arg != nil {
		d["arg"] = arg
	}
	return fnode("DefElem", d)
}

// seqOption reads one sequence option (AS type, START WITH n, INCREMENT BY
// n, MINVALUE n, MAXVALUE n, CACHE n, CYCLE, NO CYCLE), as CREATE SEQUENCE
// and an identity column take them.
func (p *fastParser) seqOption() node {
	switch {
	case p.accept("AS"):
		return defElem("as", fnode("TypeName", p.simpleTypeName()))
	case p.accept("START"):
		p.expect("WITH")
		return defElem("start", p.signedNumber())
	case p.accept("INCREMENT"):
		p.expect("BY")
		return defElem("increment", p.signedNumber())
	case p.accept("MINVALUE"):
		return defElem("minvalue", p.signedNumber())
	case p.accept("MAXVALUE"):
		return defElem("maxvalue", p.signedNumber())
	case p.accept("CACHE"):
		return defElem("cache", p.signedNumber())
	case p.accept("CYCLE"):
		return defElem("cycle", fnode("Boolean", node{"boolval": true}))
	case p.accept("NO"):
		p.expect("CYCLE")
		return defElem("cycle", fnode("Boolean", node{"boolval": false}))
	}
	p.fail()
	return nil
}

func (p *fastParser) createSequence(persistence string) node {
	schema, name := p.qualifiedName()
	var opts []any
	for p.pos < len(p.toks) {
		opts = append(opts, p.seqOption())
	}
	b := node{"sequence": rangeVarNode(schema, name, true, persistence)}
	if len(opts) > 0 {
		b["options"] = opts
	}
	return fnode("CreateSeqStmt", b)
}

func (p *fastParser) ownedBy() node {
	schema, name := p.qualifiedName()
	p.expect("OWNED", "BY")
	a := p.name()
	p.expect(".")
	b := p.name()
	p.expect(".")
	c := p.name()
	return fnode("AlterSeqStmt", node{
		"sequence": rangeVarNode(schema, name, true, "p"),
		"options":  []any{defElem("owned_by", fnode("List", node{"items": fstrings(a, b, c)}))},
	})
}

func (p *fastParser) createTable(persistence string) node {
	schema, name := p.qualifiedName()
	p.expect("(")
	var elts []any
	p.list(func() {
		if p.accept("CONSTRAINT") {
			conname := p.name()
			p.expect("CHECK")
			elts = append(elts, fnode("Constraint", p.checkBody(conname)))
		} else {
			elts = append(elts, p.columnDef())
		}
	})
	b := node{"relation": rangeVarNode(schema, name, true, persistence), "oncommit": "ONCOMMIT_NOOP"}
	if len(elts) > 0 {
		b["tableElts"] = elts
	}
	if p.accept("WITH") {
		b["options"] = p.storageOptions()
	}
	return fnode("CreateStmt", b)
}

// checkBody reads ( expr ) after CHECK.
func (p *fastParser) checkBody(conname string) node {
	p.expect("(")
	e := p.expr()
	p.expect(")")
	k := node{"contype": "CONSTR_CHECK", "initially_valid": true, "raw_expr": e}
	if conname != "" {
		k["conname"] = conname
	}
	return k
}

func (p *fastParser) columnDef() node {
	col := p.name()
	def := node{"colname": col, "typeName": p.typeName(), "is_local": true}
	var cons []any
	for {
		var k node
		switch {
		case p.accept("DEFAULT"):
			k = node{"contype": "CONSTR_DEFAULT", "raw_expr": p.term()}
		case p.accept("GENERATED"):
			k = p.generated()
		case p.accept("NOT"):
			p.expect("NULL")
			k = node{"contype": "CONSTR_NOTNULL"}
		case p.accept("CHECK"):
			k = p.checkBody("")
		}
		if k == nil {
			break
		}
		cons = append(cons, fnode("Constraint", k))
	}
	if len(cons) > 0 {
		def["constraints"] = cons
	}
	return fnode("ColumnDef", def)
}

// generated reads what follows GENERATED in a column, as Dump writes it:
// ALWAYS AS ( expr ) STORED, or ALWAYS | BY DEFAULT AS IDENTITY, optionally
// with ( [SEQUENCE NAME s.n] options ).
func (p *fastParser) generated() node {
	when := "a"
	if p.accept("BY") {
		p.expect("DEFAULT")
		when = "d"
	} else {
		p.expect("ALWAYS")
	}
	p.expect("AS")
	if when == "a" && p.accept("(") {
		e := p.expr()
		p.expect(")", "STORED")
		return node{"contype": "CONSTR_GENERATED", "generated_when": when, "raw_expr": e}
	}
	p.expect("IDENTITY")
	k := node{"contype": "CONSTR_IDENTITY", "generated_when": when}
	if p.accept("(") {
		var opts []any
		if p.accept("SEQUENCE") {
			p.expect("NAME")
			s, n := p.qualifiedName()
			opts = append(opts, defElem("sequence_name", fnode("List", node{"items": fstrings(s, n)})))
		}
		for len(opts) == 0 || !p.accept(")") {
			opts = append(opts, p.seqOption())
		}
		k["options"] = opts
	}
	return k
}

// storageOptions reads ( name='value', toast.name='value', ... ).
func (p *fastParser) storageOptions() []any {
	p.expect("(")
	var opts []any
	p.list(func() {
		t := p.next()
		if t.kind != tkWord || !allLower(t.text) {
			p.fail()
		}
		d := node{"defname": t.text, "defaction": "DEFELEM_UNSPEC"}
		if p.accept(".") {
			if t.text != "toast" {
				p.fail()
			}
			n := p.next()
			if n.kind != tkWord || !allLower(n.text) {
				p.fail()
			}
			d["defnamespace"], d["defname"] = "toast", n.text
		}
		p.expect("=")
		v := p.next()
		if v.kind != tkString {
			p.fail()
		}
		d["arg"] = fstring(v.text)
		opts = append(opts, fnode("DefElem", d))
	})
	return opts
}

// nameList reads ( name, ... ).
func (p *fastParser) nameList() []any {
	p.expect("(")
	var out []string
	p.list(func() { out = append(out, p.name()) })
	return fstrings(out...)
}

var fkActions = map[string]string{"NO ACTION": "a", "RESTRICT": "r", "CASCADE": "c", "SET NULL": "n", "SET DEFAULT": "d"}

func (p *fastParser) fkAction() string {
	var w string
	switch {
	case p.accept("NO"):
		p.expect("ACTION")
		w = "NO ACTION"
	case p.accept("RESTRICT"):
		w = "RESTRICT"
	case p.accept("CASCADE"):
		w = "CASCADE"
	case p.accept("SET"):
		switch {
		case p.accept("NULL"):
			w = "SET NULL"
		case p.accept("DEFAULT"):
			w = "SET DEFAULT"
		default:
			p.fail()
		}
		if p.is("(") {
			p.fail() // SET NULL (columns): left to the real parser
		}
	default:
		p.fail()
	}
	return fkActions[w]
}

func (p *fastParser) alterTableAddConstraint() node {
	inh := !p.accept("ONLY")
	schema, name := p.qualifiedName()
	p.expect("ADD", "CONSTRAINT")
	conname := p.name()
	var k node
	switch {
	case p.accept("PRIMARY"):
		p.expect("KEY")
		k = node{"contype": "CONSTR_PRIMARY", "conname": conname, "keys": p.nameList()}
	case p.accept("UNIQUE"):
		k = node{"contype": "CONSTR_UNIQUE", "conname": conname, "keys": p.nameList()}
	case p.accept("CHECK"):
		k = p.checkBody(conname)
	case p.accept("FOREIGN"):
		p.expect("KEY")
		fk := p.nameList()
		p.expect("REFERENCES")
		ps, pn := p.qualifiedName()
		pk := p.nameList()
		upd, del := "a", "a"
		if p.accept("ON") {
			if p.accept("UPDATE") {
				upd = p.fkAction()
				if p.accept("ON") {
					p.expect("DELETE")
					del = p.fkAction()
				}
			} else {
				p.expect("DELETE")
				del = p.fkAction()
			}
		}
		k = node{"contype": "CONSTR_FOREIGN", "conname": conname, "initially_valid": true,
			"pktable": rangeVarNode(ps, pn, true, "p"), "fk_attrs": fk, "pk_attrs": pk,
			"fk_matchtype": "s", "fk_upd_action": upd, "fk_del_action": del}
	default:
		p.fail()
	}
	return fnode("AlterTableStmt", node{
		"relation": rangeVarNode(schema, name, inh, "p"),
		"cmds": []any{fnode("AlterTableCmd", node{"subtype": "AT_AddConstraint",
			"def": fnode("Constraint", k), "behavior": "DROP_RESTRICT"})},
		"objtype": "OBJECT_TABLE",
	})
}

func (p *fastParser) createIndex() node {
	unique := p.accept("UNIQUE")
	p.expect("INDEX")
	idx := p.name()
	p.expect("ON")
	inh := !p.accept("ONLY")
	schema, name := p.qualifiedName()
	p.expect("USING")
	method := p.name()
	p.expect("(")
	var params []any
	p.list(func() { params = append(params, p.indexElem()) })
	b := node{"idxname": idx, "relation": rangeVarNode(schema, name, inh, "p"), "accessMethod": method, "indexParams": params}
	if p.accept("WHERE") {
		b["whereClause"] = p.term()
	}
	if unique {
		b["unique"] = true
	}
	return fnode("IndexStmt", b)
}

// indexElem reads one key of an index: a column, a call (no cast after it:
// the grammar wants parentheses then) or ( expr ).
func (p *fastParser) indexElem() node {
	b := node{"ordering": "SORTBY_DEFAULT", "nulls_ordering": "SORTBY_NULLS_DEFAULT"}
	switch {
	case p.accept("("):
		b["expr"] = p.expr()
		p.expect(")")
	case p.peekIs(1, "(") || p.peekIs(1, "."):
		b["expr"] = p.call()
	default:
		b["name"] = p.name()
	}
	return fnode("IndexElem", b)
}

// selectCall reads what follows SELECT in SELECT f(args) or SELECT
// s.f(args): Dump's pg_catalog.setval, and any other lone call, whose tree
// the checker then refuses.
func (p *fastParser) selectCall() node {
	return fnode("SelectStmt", node{
		"targetList":  []any{fnode("ResTarget", node{"val": p.call()})},
		"limitOption": "LIMIT_OPTION_DEFAULT",
		"op":          "SETOP_NONE",
	})
}

// createExtension reads what follows CREATE EXTENSION as Dump writes it:
// IF NOT EXISTS name WITH SCHEMA name.
func (p *fastParser) createExtension() node {
	p.expect("IF", "NOT", "EXISTS")
	ext := p.name()
	p.expect("WITH", "SCHEMA")
	schema := fnode("DefElem", node{"defname": "schema", "arg": fstring(p.name()), "defaction": "DEFELEM_UNSPEC"})
	return fnode("CreateExtensionStmt", node{"extname": ext, "if_not_exists": true, "options": []any{schema}})
}

func stringConst(s string) node { return fnode("A_Const", node{"sval": node{"sval": s}}) }

// numberConst is an unsigned number as a constant: ival when it fits 32
// bits, else fval.
func numberConst(text string) node {
	if !strings.Contains(text, ".") {
		if v, err := strconv.ParseInt(text, 10, 32); err == nil {
			if v == 0 {
				return fnode("A_Const", node{"ival": node{}})
			}
			return fnode("A_Const", node{"ival": node{"ival": json.Number(text)}})
		}
	}
	return fnode("A_Const", node{"fval": node{"fval": text}})
}

// constant reads a string, number, true, false or NULL, or returns nil.
func (p *fastParser) constant() node {
	t := p.peek()
	switch {
	case t.kind == tkString:
		p.next()
		return stringConst(t.text)
	case t.kind == tkNumber:
		p.next()
		return numberConst(t.text)
	case t.kind == tkWord && t.text == "true":
		p.next()
		return fnode("A_Const", node{"boolval": node{"boolval": true}})
	case t.kind == tkWord && t.text == "false":
		p.next()
		return fnode("A_Const", node{"boolval": node{}})
	case t.kind == tkWord && t.text == "NULL":
		p.next()
		return fnode("A_Const", node{"isnull": true})
	}
	p.fail()
	return nil
}

// typeSpellings maps format_type's spellings of built-in types (as word
// sequences) to the parser's names; a typmod list may follow the first word
// for those marked.
var typeSpellings = []struct {
	words  []string
	names  []string
	typmod int // index of the word after which "(n[,m])" may stand; -1 none
}{
	{[]string{"timestamp", "with", "time", "zone"}, []string{"pg_catalog", "timestamptz"}, 0},
	{[]string{"timestamp", "without", "time", "zone"}, []string{"pg_catalog", "timestamp"}, 0},
	{[]string{"time", "with", "time", "zone"}, []string{"pg_catalog", "timetz"}, 0},
	{[]string{"time", "without", "time", "zone"}, []string{"pg_catalog", "time"}, 0},
	{[]string{"character", "varying"}, []string{"pg_catalog", "varchar"}, 1},
	{[]string{"double", "precision"}, []string{"pg_catalog", "float8"}, -1},
	{[]string{"character"}, []string{"pg_catalog", "bpchar"}, 0},
	{[]string{"bigint"}, []string{"pg_catalog", "int8"}, -1},
	{[]string{"integer"}, []string{"pg_catalog", "int4"}, -1},
	{[]string{"smallint"}, []string{"pg_catalog", "int2"}, -1},
	{[]string{"boolean"}, []string{"pg_catalog", "bool"}, -1},
	{[]string{"real"}, []string{"pg_catalog", "float4"}, -1},
	{[]string{"numeric"}, []string{"pg_catalog", "numeric"}, 0},
	{[]string{"interval"}, []string{"pg_catalog", "interval"}, -1},
}

// genericTypes are built-in types format_type writes as their plain,
// non-keyword name.
var genericTypes = setOf("text", "inet", "cidr", "jsonb", "bytea", "uuid", "date", "macaddr", "macaddr8", "regclass", "oid", "tsvector", "money", "xml", "point", "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange")

// typeName reads a type (the grammar's Typename): a simple type name, then
// [] for an array.
func (p *fastParser) typeName() node {
	tn := p.simpleTypeName()
	if p.is("[") {
		p.next()
		p.expect("]")
		if p.is("[") {
			p.fail()
		}
		tn["arrayBounds"] = []any{fnode("Integer", node{"ival": json.Number("-1")})}
	}
	return tn
}

// simpleTypeName reads a built-in spelling, a generic built-in name, or a
// schema-qualified name (the grammar's SimpleTypename: no array bounds).
func (p *fastParser) simpleTypeName() node {
	tn := node{"typemod": json.Number("-1")}
	matched := false
	for _, sp := range typeSpellings {
		if !p.wordsAhead(sp.words) {
			continue
		}
		// "character" alone must not take "character varying"; the table
		// lists longer spellings first.
		for i, w := range sp.words {
			p.expect(w)
			if i == sp.typmod && p.is("(") {
				mods := p.typmods()
				if len(mods) > 1 && sp.names[1] != "numeric" {
					p.fail() // only numeric takes (precision, scale)
				}
				tn["typmods"] = mods
			}
		}
		if sp.names[1] == "bpchar" && tn["typmods"] == nil {
			p.fail() // character without a length is character(1): left to the real parser
		}
		tn["names"] = fstrings(sp.names...)
		matched = true
		break
	}
	if !matched {
		t := p.peek()
		switch {
		case t.kind == tkWord && genericTypes[t.text] && !p.peekIs(1, "."):
			p.next()
			tn["names"] = fstrings(t.text)
		default:
			schema, name := p.qualifiedName()
			if schema == "pg_catalog" {
				p.fail()
			}
			tn["names"] = fstrings(schema, name)
		}
	}
	return tn
}

func (p *fastParser) peekIs(n int, text string) bool {
	t := p.peekAt(n)
	return (t.kind == tkWord || t.kind == tkPunct || t.kind == tkOp) && t.text == text
}

func (p *fastParser) wordsAhead(words []string) bool {
	k := 0
	for _, w := range words {
		// a typmod may sit between the words: skip over "( ... )"
		if p.peekIs(k, "(") {
			for p.peekAt(k).kind >= 0 && !p.peekIs(k, ")") {
				k++
			}
			k++
		}
		t := p.peekAt(k)
		if t.kind != tkWord || t.text != w {
			return false
		}
		k++
	}
	return true
}

// typmods reads (n) or (n, m) of unsigned integers.
func (p *fastParser) typmods() []any {
	p.expect("(")
	var out []any
	p.list(func() {
		t := p.next()
		if t.kind != tkNumber || strings.Contains(t.text, ".") {
			p.fail()
		}
		if _, err := strconv.ParseInt(t.text, 10, 32); err != nil {
			p.fail()
		}
		out = append(out, numberConst(t.text))
	})
	return out
}

const maxFastDepth = 64

var comparisonOps = setOf("=", "<>", "<", ">", "<=", ">=")
var arithmeticOps = setOf("+", "-", "*", "/", "||")

// expr reads one expression at the top of a parenthesis:
//
//	term
//	term op term                 (one comparison or arithmetic operator)
//	term cmp ANY ( expr )
//	term AND term [AND term ...] (likewise OR)
//	NOT term
//	term IS [NOT] NULL | TRUE | FALSE
func (p *fastParser) expr() node {
	p.depth++
	if p.depth > maxFastDepth {
		p.fail()
	}
	defer func() { p.depth-- }()
	if p.accept("NOT") {
		return fnode("BoolExpr", node{"boolop": "NOT_EXPR", "args": []any{p.term()}})
	}
	left := p.term()
	t := p.peek()
	switch {
	case t.kind == tkOp && (comparisonOps[t.text] || arithmeticOps[t.text]):
		p.next()
		if comparisonOps[t.text] && p.accept("ANY") {
			p.expect("(")
			arr := p.expr()
			p.expect(")")
			return fnode("A_Expr", node{"kind": "AEXPR_OP_ANY", "name": fstrings(t.text), "lexpr": left, "rexpr": arr})
		}
		right := p.term()
		return fnode("A_Expr", node{"kind": "AEXPR_OP", "name": fstrings(t.text), "lexpr": left, "rexpr": right})
	case p.is("AND") || p.is("OR"):
		op := t.text
		args := []any{left}
		// The grammar flattens on sight: a left operand that is itself an
		// op chain, even in parentheses, takes the right one into its list
		// (gram.y makeAndExpr, makeOrExpr).
		if l, ok := left["BoolExpr"].(node); ok && l["boolop"] == op+"_EXPR" {
			args = append([]any(nil), l["args"].([]any)...)
		}
		for p.accept(op) {
			args = append(args, p.term())
		}
		if p.is("AND") || p.is("OR") {
			p.fail()
		}
		return fnode("BoolExpr", node{"boolop": op + "_EXPR", "args": args})
	case p.is("IS"):
		p.next()
		not := ""
		if p.accept("NOT") {
			not = "NOT_"
		}
		switch {
		case p.accept("NULL"):
			return fnode("NullTest", node{"arg": left, "nulltesttype": "IS_" + not + "NULL"})
		case p.accept("TRUE"):
			return fnode("BooleanTest", node{"arg": left, "booltesttype": "IS_" + not + "TRUE"})
		case p.accept("FALSE"):
			return fnode("BooleanTest", node{"arg": left, "booltesttype": "IS_" + not + "FALSE"})
		}
		p.fail()
	}
	return left
}

// term reads a constant, a column, a call, ARRAY[...], CURRENT_TIMESTAMP or
// ( expr ), then any number of ::type casts.
func (p *fastParser) term() node {
	p.depth++
	if p.depth > maxFastDepth {
		p.fail()
	}
	defer func() { p.depth-- }()
	var e node
	t := p.peek()
	switch {
	case p.is("("):
		p.next()
		e = p.expr()
		p.expect(")")
	case p.is("ARRAY"):
		p.next()
		p.expect("[")
		var elems []any
		if !p.is("]") {
			for {
				elems = append(elems, p.expr())
				if !p.accept(",") {
					break
				}
			}
		}
		p.expect("]")
		b := node{}
		if len(elems) > 0 {
			b["elements"] = elems
		}
		e = fnode("A_ArrayExpr", b)
	case p.is("CURRENT_TIMESTAMP"):
		p.next()
		if p.is("(") {
			p.fail()
		}
		e = fnode("SQLValueFunction", node{"op": "SVFOP_CURRENT_TIMESTAMP", "typmod": json.Number("-1")})
	case t.kind == tkString || t.kind == tkNumber || t.kind == tkWord && (t.text == "true" || t.text == "false" || t.text == "NULL"):
		e = p.constant()
	case p.isName():
		if p.peekIs(1, "(") || p.peekIs(1, ".") {
			e = p.call()
		} else {
			e = fnode("ColumnRef", node{"fields": fstrings(p.name())})
		}
	default:
		p.fail()
	}
	for p.accept("::") {
		e = fnode("TypeCast", node{"arg": e, "typeName": p.typeName()})
	}
	if p.is("[") || p.is(".") {
		p.fail() // subscripts and field selection: left to the real parser
	}
	return e
}

// call reads name(args) or schema.name(args); a qualified name not followed
// by ( (a column of a table) is left to the real parser.
func (p *fastParser) call() node {
	names := []string{p.name()}
	if p.accept(".") {
		names = append(names, p.name())
	}
	p.expect("(")
	call := node{"funcname": fstrings(names...), "funcformat": "COERCE_EXPLICIT_CALL"}
	if !p.accept(")") {
		var args []any
		p.list(func() { args = append(args, p.expr()) })
		call["args"] = args
	}
	return fnode("FuncCall", call)
}

// fastStatementType names the type of the statement PostgreSQL's grammar
// builds from sql, when the leading words alone decide it, without parsing
// the rest: the checker refuses a type its entry cannot hold before the
// grammar is compiled (a hostile stream's statements are mostly of such
// types). It holds only where the text is in the narrow spelling (so it is
// one statement: no semicolon, no comment) and for these beginnings, each
// of which the grammar (gram.y) builds into one type only, whatever follows,
// when the rest parses at all:
//
//	COPY                                     CopyStmt
//	DO                                       DoStmt
//	ALTER SYSTEM                             AlterSystemStmt
//	SET ROLE, SET SESSION                    VariableSetStmt
//	GRANT ... ON ... (ON before any TO)      GrantStmt (GRANT roles TO ... has no ON before TO)
//	CREATE ROLE                              CreateRoleStmt
//	CREATE [OR REPLACE] FUNCTION|PROCEDURE   CreateFunctionStmt
//	CREATE [OR REPLACE] [CONSTRAINT] TRIGGER CreateTrigStmt
//	CREATE EVENT TRIGGER                     CreateEventTrigStmt
//	CREATE TABLE name[.name] AS              CreateTableAsStmt
//
// A statement that does not parse is refused by the grammar anyway; this
// only names the refusal by its type instead. TestFastStatementType and
// FuzzFastParse compare every type it names with the grammar's.
func fastStatementType(sql string) (typ string, ok bool) {
	return runFast(sql, (*fastParser).statementType)
}

func (p *fastParser) statementType() string {
	switch {
	case p.accept("COPY"):
		return "CopyStmt"
	case p.accept("DO"):
		return "DoStmt"
	case p.accept("ALTER"):
		p.expect("SYSTEM")
		return "AlterSystemStmt"
	case p.accept("SET"):
		if p.is("ROLE") || p.is("SESSION") {
			return "VariableSetStmt"
		}
	case p.accept("GRANT"):
		for _, t := range p.toks[p.pos:] {
			if t.kind != tkWord {
				continue
			}
			switch strings.ToUpper(t.text) {
			case "ON":
				return "GrantStmt"
			case "TO":
				p.fail()
			}
		}
	case p.accept("CREATE"):
		orReplace := p.accept("OR")
		if orReplace {
			p.expect("REPLACE")
		}
		switch {
		case p.is("FUNCTION") || p.is("PROCEDURE"):
			return "CreateFunctionStmt"
		case p.is("TRIGGER") || p.is("CONSTRAINT") && p.peekIs(1, "TRIGGER"):
			return "CreateTrigStmt"
		case orReplace:
		case p.is("ROLE"):
			return "CreateRoleStmt"
		case p.is("EVENT") && p.peekIs(1, "TRIGGER"):
			return "CreateEventTrigStmt"
		case p.accept("TABLE"):
			p.name()
			if p.accept(".") {
				p.name()
			}
			p.expect("AS")
			return "CreateTableAsStmt"
		}
	}
	p.fail()
	return ""
}
