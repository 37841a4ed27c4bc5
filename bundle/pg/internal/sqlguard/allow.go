package sqlguard

// What a stream's statements may name: the allowlists of the checker.

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
// {1,63}, whose compilation every start of the binary paid: docs/architecture.md,
// "Measured choices").
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

// IsBuiltinFunc reports whether name is one of the pg_catalog functions
// that defaults, CHECK constraints, generated columns and index expressions
// may call.
func IsBuiltinFunc(name string) bool { return builtinFuncs[name] }
