package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// collationExpr is a SQL expression printing the qualified name of collation
// OID expression oid.
func collationExpr(oid string) string {
	return `(SELECT pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname)
		FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
		WHERE co.oid = ` + oid + `)`
}

// typeDDL reads what it takes to recreate a user type and returns the
// statements: CREATE TYPE/DOMAIN and the type's comment.
func typeDDL(ctx context.Context, conn *pgx.Conn, t typeDef, version int) ([]string, error) {
	var (
		stmts []string
		err   error
		name  = qualified(t.schema, t.name)
	)
	switch t.kind {
	case 'e':
		stmts, err = enumDDL(ctx, conn, t, name)
	case 'd':
		stmts, err = domainDDL(ctx, conn, t, name)
	case 'r':
		stmts, err = rangeDDL(ctx, conn, t, name, version)
	case 'c':
		stmts, err = compositeDDL(ctx, conn, t, name)
	default:
		err = fmt.Errorf("%w: type %s.%s of kind %q", ErrUnsupportedObject, t.schema, t.name, t.kind)
	}
	if err != nil {
		return nil, err
	}
	if t.comment != nil {
		kind := "TYPE"
		if t.kind == 'd' {
			kind = "DOMAIN"
		}
		stmts = append(stmts, "COMMENT ON "+kind+" "+name+" IS "+literal(*t.comment))
	}
	return stmts, nil
}

func enumDDL(ctx context.Context, conn *pgx.Conn, t typeDef, name string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT enumlabel FROM pg_catalog.pg_enum WHERE enumtypid = $1 ORDER BY enumsortorder`, t.oid)
	if err != nil {
		return nil, fmt.Errorf("read enum %s: %w", name, err)
	}
	labels, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read enum %s: %w", name, err)
	}
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = literal(l)
	}
	return []string{"CREATE TYPE " + name + " AS ENUM (" + strings.Join(quoted, ", ") + ")"}, nil
}

func domainDDL(ctx context.Context, conn *pgx.Conn, t typeDef, name string) ([]string, error) {
	var base string
	var notNull bool
	var def, coll *string
	err := conn.QueryRow(ctx, `SELECT pg_catalog.format_type(t.typbasetype, t.typtypmod), t.typnotnull,
			pg_catalog.pg_get_expr(t.typdefaultbin, 0),
			CASE WHEN t.typcollation <> b.typcollation THEN `+collationExpr("t.typcollation")+` END
		FROM pg_catalog.pg_type t JOIN pg_catalog.pg_type b ON b.oid = t.typbasetype WHERE t.oid = $1`, t.oid).
		Scan(&base, &notNull, &def, &coll)
	if err != nil {
		return nil, fmt.Errorf("read domain %s: %w", name, err)
	}
	var b strings.Builder
	b.WriteString("CREATE DOMAIN " + name + " AS " + base)
	if coll != nil {
		b.WriteString(" COLLATE " + *coll)
	}
	if def != nil {
		b.WriteString(" DEFAULT " + *def)
	}
	if notNull {
		b.WriteString(" NOT NULL")
	}
	rows, err := conn.Query(ctx, `SELECT conname, pg_catalog.pg_get_constraintdef(oid), convalidated,
			pg_catalog.obj_description(oid, 'pg_constraint')
		FROM pg_catalog.pg_constraint WHERE contypid = $1 AND contype = 'c' ORDER BY conname`, t.oid)
	if err != nil {
		return nil, fmt.Errorf("read domain %s constraints: %w", name, err)
	}
	var later []string
	var conname, def2 string
	var validated bool
	var comment *string
	_, err = pgx.ForEachRow(rows, []any{&conname, &def2, &validated, &comment}, func() error {
		if validated {
			b.WriteString(" CONSTRAINT " + ident(conname) + " " + def2)
		} else {
			later = append(later, "ALTER DOMAIN "+name+" ADD CONSTRAINT "+ident(conname)+" "+def2)
		}
		if comment != nil {
			later = append(later, "COMMENT ON CONSTRAINT "+ident(conname)+" ON DOMAIN "+name+" IS "+literal(*comment))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read domain %s constraints: %w", name, err)
	}
	return append([]string{b.String()}, later...), nil
}

func rangeDDL(ctx context.Context, conn *pgx.Conn, t typeDef, name string, version int) ([]string, error) {
	multirange := "NULL::text"
	if version >= 140000 {
		multirange = "pg_catalog.format_type(r.rngmultitypid, NULL)"
	}
	var subtype string
	var opclass, coll, canonical, diff, multi *string
	err := conn.QueryRow(ctx, `SELECT pg_catalog.format_type(r.rngsubtype, NULL),
			CASE WHEN NOT opc.opcdefault THEN pg_catalog.quote_ident(opn.nspname) || '.' || pg_catalog.quote_ident(opc.opcname) END,
			CASE WHEN r.rngcollation <> 0 AND r.rngcollation <> st.typcollation THEN `+collationExpr("r.rngcollation")+` END,
			CASE WHEN r.rngcanonical <> 0 THEN r.rngcanonical::pg_catalog.regproc::text END,
			CASE WHEN r.rngsubdiff <> 0 THEN r.rngsubdiff::pg_catalog.regproc::text END,
			`+multirange+`
		FROM pg_catalog.pg_range r
		JOIN pg_catalog.pg_type st ON st.oid = r.rngsubtype
		JOIN pg_catalog.pg_opclass opc ON opc.oid = r.rngsubopc
		JOIN pg_catalog.pg_namespace opn ON opn.oid = opc.opcnamespace
		WHERE r.rngtypid = $1`, t.oid).Scan(&subtype, &opclass, &coll, &canonical, &diff, &multi)
	if err != nil {
		return nil, fmt.Errorf("read range type %s: %w", name, err)
	}
	parts := []string{"subtype = " + subtype}
	if multi != nil {
		parts = append(parts, "multirange_type_name = "+*multi)
	}
	if opclass != nil {
		parts = append(parts, "subtype_opclass = "+*opclass)
	}
	if coll != nil {
		parts = append(parts, "collation = "+*coll)
	}
	if canonical != nil {
		parts = append(parts, "canonical = "+*canonical)
	}
	if diff != nil {
		parts = append(parts, "subtype_diff = "+*diff)
	}
	return []string{"CREATE TYPE " + name + " AS RANGE (" + strings.Join(parts, ", ") + ")"}, nil
}

func compositeDDL(ctx context.Context, conn *pgx.Conn, t typeDef, name string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),
			CASE WHEN a.attcollation <> ty.typcollation THEN `+collationExpr("a.attcollation")+` END
		FROM pg_catalog.pg_type t
		JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid
		JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid
		WHERE t.oid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.oid)
	if err != nil {
		return nil, fmt.Errorf("read composite type %s: %w", name, err)
	}
	var attrs []string
	var attname, typ string
	var coll *string
	_, err = pgx.ForEachRow(rows, []any{&attname, &typ, &coll}, func() error {
		a := ident(attname) + " " + typ
		if coll != nil {
			a += " COLLATE " + *coll
		}
		attrs = append(attrs, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read composite type %s: %w", name, err)
	}
	return []string{"CREATE TYPE " + name + " AS (" + strings.Join(attrs, ", ") + ")"}, nil
}
