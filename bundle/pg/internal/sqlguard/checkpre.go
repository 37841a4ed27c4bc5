package sqlguard

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The pre-data shapes: schemas, extensions, types, sequences, tables.

func (c *Checker) createSchema(o Entry, b node) error {
	if err := only(b, "CREATE SCHEMA", "schemaname"); err != nil {
		return err
	}
	s := str(b, "schemaname")
	if !c.schemas[s] {
		return fmt.Errorf("schema %q is not one the header lists", s)
	}
	return matches(o, s, s)
}

func (c *Checker) createExtension(o Entry, b node) error {
	if err := only(b, "CREATE EXTENSION", "extname", "if_not_exists", "options"); err != nil {
		return err
	}
	name := str(b, "extname")
	if _, ok := allowedExtensions[name]; !ok {
		return fmt.Errorf("extension %q is not allowed (allowed: the data-type extensions %s)", name, strings.Join(slices.Sorted(maps.Keys(allowedExtensions)), ", "))
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
func (c *Checker) twoPartName(items []any, what string) (qname, error) {
	s, ok := stringNodes(items)
	if !ok || len(s) != 2 {
		return qname{}, fmt.Errorf("%s must be schema-qualified", what)
	}
	if !c.schemas[s[0]] {
		return qname{}, fmt.Errorf("%s %s is in schema %q, which the header does not list", what, qualifiedText(s[0], s[1]), s[0])
	}
	return qname{s[0], s[1]}, nil
}

func (c *Checker) typeStatement(o Entry, typ string, b node) error {
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
func (c *Checker) rangeVar(rv node, unloggedOK bool) (qname, error) {
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
func (c *Checker) streamTable(rv node) (qname, error) {
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
func (c *Checker) seqOptions(opts []any, identity bool) error {
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

func (c *Checker) createSequence(o Entry, b node) error {
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

func (c *Checker) createTable(o Entry, b node) error {
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
func (c *Checker) storageOptions(opts []any) error {
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
