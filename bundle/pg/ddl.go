package pg

import (
	"strconv"
	"strings"
)

// object is one DDL statement of the stream's pre-data or post-data list.
type object struct {
	// Kind is what the statement makes: SCHEMA, EXTENSION, TYPE, SEQUENCE,
	// TABLE, SEQUENCE OWNED BY, CONSTRAINT, FK CONSTRAINT, INDEX, SEQUENCE SET,
	// COMMENT, ...
	Kind   string `json:"kind"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
	SQL    string `json:"sql"`
}

// ident quotes an identifier always: quoting a name that needs none creates
// the same object, and no keyword list is needed.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func qualified(schema, name string) string { return ident(schema) + "." + ident(name) }

// literal quotes a string constant (standard_conforming_strings is on in every
// session that replays it).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func commentSQL(target string, comment *string) string {
	return "COMMENT ON " + target + " IS " + literal(*comment)
}

// sequenceOptions is the option list shared by CREATE SEQUENCE and identity
// columns; every value is explicit so no server default is assumed.
func sequenceOptions(s *sequenceDef) string {
	return "AS " + s.typ + " " + sequenceParams(s)
}

// sequenceParams are the options an identity column takes (its type is the
// column's).
func sequenceParams(s *sequenceDef) string {
	opts := []string{
		"START WITH " + strconv.FormatInt(s.start, 10),
		"INCREMENT BY " + strconv.FormatInt(s.incr, 10),
		"MINVALUE " + strconv.FormatInt(s.min, 10),
		"MAXVALUE " + strconv.FormatInt(s.max, 10),
		"CACHE " + strconv.FormatInt(s.cache, 10),
	}
	if s.cycle {
		opts = append(opts, "CYCLE")
	} else {
		opts = append(opts, "NO CYCLE")
	}
	return strings.Join(opts, " ")
}

func sequenceDDL(s *sequenceDef) []object {
	name := qualified(s.schema, s.name)
	create := "CREATE "
	if s.unlogged {
		create += "UNLOGGED "
	}
	out := []object{{Kind: "SEQUENCE", Schema: s.schema, Name: s.name, SQL: create + "SEQUENCE " + name + " " + sequenceOptions(s)}}
	if s.comment != nil {
		out = append(out, object{Kind: "COMMENT", Schema: s.schema, Name: s.name, SQL: commentSQL("SEQUENCE "+name, s.comment)})
	}
	return out
}

// tableDDL is CREATE TABLE with columns, defaults, NOT NULL, generated and
// identity columns, validated CHECK constraints and storage options, followed
// by per-column settings and comments. Keys, indexes and foreign keys come
// after the data (post-data).
func tableDDL(t *tableDef, identitySeq map[[2]uint32]*sequenceDef) []object {
	name := t.qualified()
	var b strings.Builder
	b.WriteString("CREATE ")
	if t.unlogged {
		b.WriteString("UNLOGGED ")
	}
	b.WriteString("TABLE " + name + " (")
	var parts []string
	for _, c := range t.columns {
		col := ident(c.name) + " " + c.typ
		if c.collation != nil {
			col += " COLLATE " + *c.collation
		}
		switch {
		case c.generated == "s" && c.def != nil:
			col += " GENERATED ALWAYS AS (" + *c.def + ") STORED"
		case c.identity != "":
			col += " GENERATED "
			if c.identity == "a" {
				col += "ALWAYS"
			} else {
				col += "BY DEFAULT"
			}
			col += " AS IDENTITY"
			if s := identitySeq[[2]uint32{t.oid, uint32(c.num)}]; s != nil {
				col += " (SEQUENCE NAME " + qualified(s.schema, s.name) + " " + sequenceParams(s) + ")"
			}
		case c.def != nil:
			col += " DEFAULT " + *c.def
		}
		if c.notNull {
			col += " NOT NULL"
		}
		parts = append(parts, col)
	}
	for _, k := range t.checks {
		if k.validated {
			parts = append(parts, "CONSTRAINT "+ident(k.conname)+" "+k.def)
		}
	}
	b.WriteString(strings.Join(parts, ", "))
	b.WriteString(")")
	var with []string
	with = append(with, t.reloptions...)
	for _, o := range t.toastOptions {
		with = append(with, "toast."+o)
	}
	if len(with) > 0 {
		b.WriteString(" WITH (" + strings.Join(quoteOptions(with), ", ") + ")")
	}
	out := []object{{Kind: "TABLE", Schema: t.schema, Name: t.name, SQL: b.String()}}
	alter := func(sql string) {
		out = append(out, object{Kind: "TABLE OPTION", Schema: t.schema, Name: t.name, SQL: "ALTER TABLE ONLY " + name + " " + sql})
	}
	for _, c := range t.columns {
		col := "ALTER COLUMN " + ident(c.name)
		if c.statTarget >= 0 {
			alter(col + " SET STATISTICS " + strconv.Itoa(c.statTarget))
		}
		if c.storage != "" {
			alter(col + " SET STORAGE " + storageName(c.storage))
		}
		if len(c.options) > 0 {
			alter(col + " SET (" + strings.Join(quoteOptions(c.options), ", ") + ")")
		}
		if c.compression != "" {
			alter(col + " SET COMPRESSION " + compressionName(c.compression))
		}
	}
	switch t.replident {
	case "n":
		alter("REPLICA IDENTITY NOTHING")
	case "f":
		alter("REPLICA IDENTITY FULL")
	}
	for _, k := range t.checks {
		if !k.validated {
			out = append(out, object{Kind: "CHECK CONSTRAINT", Schema: t.schema, Name: k.conname,
				SQL: "ALTER TABLE " + name + " ADD CONSTRAINT " + ident(k.conname) + " " + k.def})
		}
	}
	if t.comment != nil {
		out = append(out, object{Kind: "COMMENT", Schema: t.schema, Name: t.name, SQL: commentSQL("TABLE "+name, t.comment)})
	}
	for _, c := range t.columns {
		if c.comment != nil {
			out = append(out, object{Kind: "COMMENT", Schema: t.schema, Name: t.name + "." + c.name,
				SQL: commentSQL("COLUMN "+name+"."+ident(c.name), c.comment)})
		}
	}
	for _, k := range t.checks {
		if k.comment != nil {
			out = append(out, object{Kind: "COMMENT", Schema: t.schema, Name: k.conname,
				SQL: commentSQL("CONSTRAINT "+ident(k.conname)+" ON "+name, k.comment)})
		}
	}
	return out
}

// quoteOptions turns catalog reloptions ("name=value") into a WITH list; the
// value is quoted as a literal so any value replays.
func quoteOptions(opts []string) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			out[i] = o
			continue
		}
		out[i] = k + "=" + literal(v)
	}
	return out
}

func storageName(s string) string {
	switch s {
	case "p":
		return "PLAIN"
	case "e":
		return "EXTERNAL"
	case "m":
		return "MAIN"
	default:
		return "EXTENDED"
	}
}

func compressionName(s string) string {
	if s == "l" {
		return "lz4"
	}
	return "pglz"
}

func constraintDDL(k constraintDef) []object {
	table := qualified(k.schema, k.name)
	kind := "CONSTRAINT"
	if k.kind == 'f' {
		kind = "FK CONSTRAINT"
	}
	out := []object{{Kind: kind, Schema: k.schema, Name: k.conname,
		SQL: "ALTER TABLE ONLY " + table + " ADD CONSTRAINT " + ident(k.conname) + " " + k.def}}
	if k.clustered || k.replIdent {
		idx := ident(k.conname) // the constraint's index has the constraint's name
		if k.clustered {
			out = append(out, object{Kind: "CLUSTER", Schema: k.schema, Name: k.conname, SQL: "ALTER TABLE ONLY " + table + " CLUSTER ON " + idx})
		}
		if k.replIdent {
			out = append(out, object{Kind: "REPLICA IDENTITY", Schema: k.schema, Name: k.conname, SQL: "ALTER TABLE ONLY " + table + " REPLICA IDENTITY USING INDEX " + idx})
		}
	}
	if k.comment != nil {
		out = append(out, object{Kind: "COMMENT", Schema: k.schema, Name: k.conname, SQL: commentSQL("CONSTRAINT "+ident(k.conname)+" ON "+table, k.comment)})
	}
	return out
}

func indexDDL(x indexDef, table *tableDef) []object {
	out := []object{{Kind: "INDEX", Schema: x.schema, Name: x.name, SQL: x.def}}
	if x.clustered {
		out = append(out, object{Kind: "CLUSTER", Schema: x.schema, Name: x.name, SQL: "ALTER TABLE ONLY " + table.qualified() + " CLUSTER ON " + ident(x.name)})
	}
	if x.replIdent {
		out = append(out, object{Kind: "REPLICA IDENTITY", Schema: x.schema, Name: x.name, SQL: "ALTER TABLE ONLY " + table.qualified() + " REPLICA IDENTITY USING INDEX " + ident(x.name)})
	}
	if x.comment != nil {
		out = append(out, object{Kind: "COMMENT", Schema: x.schema, Name: x.name, SQL: commentSQL("INDEX "+qualified(x.schema, x.name), x.comment)})
	}
	return out
}
