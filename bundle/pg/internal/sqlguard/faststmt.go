package sqlguard

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The fast path's statements, as Dump writes them (see fast.go).

// comment reads COMMENT ON what IS 'text' | NULL, for the objects Dump
// comments on: SCHEMA s, TABLE|SEQUENCE|INDEX s.n, COLUMN s.t.c and
// CONSTRAINT c ON s.t.
func (p *fastParser) comment() node {
	p.expect("COMMENT", "ON")
	b := node{}
	switch {
	case p.is("SCHEMA") || p.is("ROLE"):
		b["objtype"] = "OBJECT_" + p.next().Text
		b["object"] = fstring(p.name())
	case p.is("TABLE") || p.is("SEQUENCE") || p.is("INDEX"):
		b["objtype"] = "OBJECT_" + p.next().Text
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
		if t.Kind != String {
			p.fail()
		}
		b["comment"] = t.Text
	}
	return fnode("CommentStmt", b)
}

// signedNumber reads a number with an optional minus, as the grammar's
// NumericOnly makes it: an Integer node when it fits 32 bits, else a Float
// with the text.
func (p *fastParser) signedNumber() node {
	neg := p.accept("-")
	t := p.next()
	if t.Kind != Number {
		p.fail()
	}
	text := t.Text
	if neg {
		text = "-" + text
	}
	if !strings.Contains(t.Text, ".") {
		if v, err := strconv.ParseInt(t.Text, 10, 32); err == nil {
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
		if t.Kind != Ident || !allLower(t.Text) {
			p.fail()
		}
		d := node{"defname": t.Text, "defaction": "DEFELEM_UNSPEC"}
		if p.accept(".") {
			if t.Text != "toast" {
				p.fail()
			}
			n := p.next()
			if n.Kind != Ident || !allLower(n.Text) {
				p.fail()
			}
			d["defnamespace"], d["defname"] = "toast", n.Text
		}
		p.expect("=")
		v := p.next()
		if v.Kind != String {
			p.fail()
		}
		d["arg"] = fstring(v.Text)
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
