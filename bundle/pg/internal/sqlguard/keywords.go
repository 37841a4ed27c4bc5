package sqlguard

import (
	"maps"
	"slices"
)

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
func NonUnreservedKeywords() []string { return slices.Sorted(maps.Keys(nonUnreservedKeywords)) }
