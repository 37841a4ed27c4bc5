package sqlguard

import (
	"errors"
	"fmt"
	"strings"
)

// Expressions, types, constraints and the names they look up.

func (c *Checker) indexElem(e any) error {
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
func (c *Checker) qualifiedLookupName(items []any, valid func(string) bool) error {
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

func (c *Checker) collation(cc node) error {
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
func (c *Checker) constraint(v any, kinds ...string) error {
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
func (c *Checker) typeName(tn node) error {
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
func (c *Checker) expr(v any) error { return c.exprDepth(v, 0) }

func (c *Checker) exprDepth(v any, depth int) error {
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

func (c *Checker) allowedFunc(names []string) bool {
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
