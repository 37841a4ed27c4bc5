package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

type sequenceDef struct {
	oid             uint32
	schema, name    string
	typ             string
	start, incr     int64
	min, max, cache int64
	cycle           bool
	unlogged        bool
	ownerTable      uint32 // 0: not owned
	ownerColumn     string
	ownerColumnNum  int16
	identity        bool // owned by an identity column: created with the column
	comment         *string
	lastValue       int64
	isCalled        bool
}

func readSequences(ctx context.Context, conn *pgx.Conn, schemaOIDs []uint32) ([]sequenceDef, error) {
	rows, err := conn.Query(ctx, `SELECT c.oid, n.nspname, c.relname, pg_catalog.format_type(s.seqtypid, NULL),
			s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle, c.relpersistence = 'u',
			COALESCE(d.refobjid, 0), COALESCE(a.attname, ''), COALESCE(a.attnum, 0), COALESCE(d.deptype = 'i', false),
			pg_catalog.obj_description(c.oid, 'pg_class')
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_catalog.pg_sequence s ON s.seqrelid = c.oid
		LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
			AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
		LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
		WHERE c.relkind = 'S' AND c.relnamespace = ANY($1) AND `+notExtensionMember("pg_catalog.pg_class", "c.oid")+`
		ORDER BY n.nspname, c.relname`, schemaOIDs)
	if err != nil {
		return nil, fmt.Errorf("read sequences: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sequenceDef, error) {
		var s sequenceDef
		err := r.Scan(&s.oid, &s.schema, &s.name, &s.typ, &s.start, &s.incr, &s.min, &s.max, &s.cache, &s.cycle, &s.unlogged,
			&s.ownerTable, &s.ownerColumn, &s.ownerColumnNum, &s.identity, &s.comment)
		return s, err
	})
}

// readSequenceValue reads a sequence's current state. Sequences are not
// transactional: this is its value now, not at the snapshot, which is at least
// as far as any value the snapshot's rows hold.
func readSequenceValue(ctx context.Context, conn *pgx.Conn, s *sequenceDef) error {
	err := conn.QueryRow(ctx, "SELECT last_value, is_called FROM "+qualified(s.schema, s.name)).Scan(&s.lastValue, &s.isCalled)
	if err != nil {
		return fmt.Errorf("read sequence %s.%s: %w", s.schema, s.name, err)
	}
	return nil
}
