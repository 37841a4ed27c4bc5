package sqlguard

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The fast path's constants, types and expressions (see fast.go).

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
	case t.Kind == String:
		p.next()
		return stringConst(t.Text)
	case t.Kind == Number:
		p.next()
		return numberConst(t.Text)
	case t.Kind == Ident && t.Text == "true":
		p.next()
		return fnode("A_Const", node{"boolval": node{"boolval": true}})
	case t.Kind == Ident && t.Text == "false":
		p.next()
		return fnode("A_Const", node{"boolval": node{}})
	case t.Kind == Ident && t.Text == "NULL":
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
		case t.Kind == Ident && genericTypes[t.Text] && !p.peekIs(1, "."):
			p.next()
			tn["names"] = fstrings(t.Text)
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
	return isText(t) && t.Text == text
}

func (p *fastParser) wordsAhead(words []string) bool {
	k := 0
	for _, w := range words {
		// a typmod may sit between the words: skip over "( ... )"
		if p.peekIs(k, "(") {
			for p.peekAt(k).Kind != eof && !p.peekIs(k, ")") {
				k++
			}
			k++
		}
		t := p.peekAt(k)
		if t.Kind != Ident || t.Text != w {
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
		if t.Kind != Number || strings.Contains(t.Text, ".") {
			p.fail()
		}
		if _, err := strconv.ParseInt(t.Text, 10, 32); err != nil {
			p.fail()
		}
		out = append(out, numberConst(t.Text))
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
	case t.Kind == Op && (comparisonOps[t.Text] || arithmeticOps[t.Text]):
		p.next()
		if comparisonOps[t.Text] && p.accept("ANY") {
			p.expect("(")
			arr := p.expr()
			p.expect(")")
			return fnode("A_Expr", node{"kind": "AEXPR_OP_ANY", "name": fstrings(t.Text), "lexpr": left, "rexpr": arr})
		}
		right := p.term()
		return fnode("A_Expr", node{"kind": "AEXPR_OP", "name": fstrings(t.Text), "lexpr": left, "rexpr": right})
	case p.is("AND") || p.is("OR"):
		op := t.Text
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
	case t.Kind == String || t.Kind == Number || t.Kind == Ident && (t.Text == "true" || t.Text == "false" || t.Text == "NULL"):
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
