package sqlguard

import (
	"errors"
	"fmt"
	"strings"
)

// The post-data shapes: ALTER TABLE (keys, constraints, options, CLUSTER,
// REPLICA IDENTITY), OWNED BY, comments, indexes, sequence values.

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

func (c *Checker) alterTable(o Entry, b node) error {
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
func (c *Checker) indexOf(table qname, name string, o Entry) error {
	if !c.indexes[qname{table.schema, name}] {
		return fmt.Errorf("index %q is not created by the stream", name)
	}
	return matches(o, table.schema, name)
}

func (c *Checker) ownedBy(b node) error {
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

func (c *Checker) comment(b node) error {
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

func (c *Checker) createIndex(o Entry, b node) error {
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

// setval checks SELECT pg_catalog.setval('<sequence>', <integer>, <boolean>)
// for a sequence the stream created.
func (c *Checker) setval(b node) error {
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
