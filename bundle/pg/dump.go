package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// minServerVersion is the oldest source server Dump reads (generated columns
// and the catalogs queried here exist from PostgreSQL 12 on).
const minServerVersion = 120000

// Dump writes ONE consistent snapshot of the database at connString to w as a
// dump stream (docs/bundle-format.md, "The dump stream"): it reads the schema from the
// catalogs and every table's rows with COPY TO inside one REPEATABLE READ, READ
// ONLY transaction (SERIALIZABLE, READ ONLY, DEFERRABLE with opts.Deferrable).
// It streams: the only buffer is one data chunk (opts.ChunkSize). The stream is
// uncompressed; the caller compresses and encrypts it.
func Dump(ctx context.Context, connString string, w io.Writer, opts DumpOptions) (*Summary, error) {
	log := logger(opts.Logger)
	conn, err := connect(ctx, connString, "source")
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.Background()) }()

	version, versionNum, err := serverVersion(ctx, conn)
	if err != nil {
		return nil, err
	}
	if versionNum < minServerVersion {
		return nil, fmt.Errorf("source server is PostgreSQL %s; dumping needs PostgreSQL 12 or newer", version)
	}
	begin := "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
	if opts.Deferrable {
		begin = "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE"
	}
	if _, err := conn.Exec(ctx, begin); err != nil {
		return nil, fmt.Errorf("start snapshot transaction: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "ROLLBACK") }()

	progress := func(ev ProgressEvent) {
		if opts.Progress != nil {
			opts.Progress(ev)
		}
	}
	progress(ProgressEvent{Phase: PhaseSchema})
	plan, err := readPlan(ctx, conn, versionNum, opts)
	if err != nil {
		return nil, err
	}
	plan.header.ServerVersion = version
	plan.header.ServerVersionNum = versionNum
	log.Debug("dump plan", "tables", len(plan.tables), "preData", len(plan.preData), "serverVersion", version)

	sw := newStreamWriter(w)
	if err := sw.json(memberHeader, plan.header); err != nil {
		return nil, err
	}
	// The post-data that does not depend on the rows goes into pre-data too
	// (1.2), so a restore can index each table as soon as it is loaded.
	if err := sw.json(memberPreData, streamDDL{Objects: plan.preData, PostData: plan.structure()}); err != nil {
		return nil, err
	}

	chunkSize := opts.ChunkSize
	if chunkSize <= 0 {
		chunkSize = defaultChunkSize
	}
	buf := make([]byte, chunkSize)
	var summary streamSummary
	for i, t := range plan.tables {
		st := plan.header.Tables[i]
		h := st.newHash()
		if t.dumpData {
			ev := ProgressEvent{Phase: PhaseData, Table: t.schema + "." + t.name, TablesDone: i, TablesTotal: len(plan.tables), Bytes: summary.DataBytes}
			progress(ev)
			ch := &chunker{s: sw, table: i + 1, buf: buf, onData: func(n int) {
				ev.TableBytes += int64(n)
				ev.Bytes += int64(n)
				progress(ev)
			}}
			tag, err := conn.PgConn().CopyTo(ctx, io.MultiWriter(h, ch), st.copyToSQL(st.qualified()))
			if err != nil {
				return nil, fmt.Errorf("dump table %s.%s: %w", t.schema, t.name, err)
			}
			if err := ch.flush(); err != nil {
				return nil, err
			}
			if tag.RowsAffected() != h.rows {
				return nil, fmt.Errorf("dump table %s.%s: server sent %d rows but the data holds %d", t.schema, t.name, tag.RowsAffected(), h.rows)
			}
			log.Debug("dumped table", "table", t.schema+"."+t.name, "rows", h.rows, "bytes", h.bytes)
		}
		summary.Tables = append(summary.Tables, TableSummary{Schema: t.schema, Name: t.name, Rows: h.rows, Checksum: h.sum(), DataBytes: h.bytes})
		summary.DataBytes += h.bytes
	}

	progress(ProgressEvent{Phase: PhasePostData, TablesDone: len(plan.tables), TablesTotal: len(plan.tables), Bytes: summary.DataBytes})
	post, err := plan.postData(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := sw.json(memberPostData, streamDDL{Objects: post}); err != nil {
		return nil, err
	}
	if err := sw.json(memberSummary, summary); err != nil {
		return nil, err
	}
	if err := sw.close(); err != nil {
		return nil, err
	}
	progress(ProgressEvent{Phase: PhaseDone, TablesDone: len(plan.tables), TablesTotal: len(plan.tables), Bytes: summary.DataBytes})
	return &Summary{ServerVersion: version, LastMigration: plan.header.LastMigration, Tables: summary.Tables, Bytes: sw.count.N}, nil
}

// copyColumnList is the column list of a COPY statement; a table without
// columns to copy gets none (COPY then moves empty rows).
func copyColumnList(t streamTable) string {
	if len(t.Columns) == 0 {
		return ""
	}
	return t.copyColumns()
}

// plan is what Dump read from the catalogs before copying data.
type plan struct {
	header      streamHeader
	preData     []object
	tables      []*tableDef
	sequences   []sequenceDef
	constraints []constraintDef
	indexes     []indexDef
}

func readPlan(ctx context.Context, conn *pgx.Conn, version int, opts DumpOptions) (*plan, error) {
	schemas, err := readSchemas(ctx, conn, opts.Schemas)
	if err != nil {
		return nil, err
	}
	var schemaOIDs []uint32
	p := &plan{header: streamHeader{Format: FormatName, Version: fmt.Sprintf("%d.%d", FormatMajor, FormatMinor), Checksum: checksumXXH3, Settings: map[string]string{}}}
	for _, s := range schemas {
		schemaOIDs = append(schemaOIDs, s.oid)
		p.header.Schemas = append(p.header.Schemas, s.name)
	}
	for _, s := range sessionSettings {
		p.header.Settings[s[0]] = s[1]
	}
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_encoding_to_char(encoding) FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()").Scan(&p.header.Encoding); err != nil {
		return nil, fmt.Errorf("read database encoding: %w", err)
	}

	if p.tables, err = readTables(ctx, conn, schemaOIDs, version, opts); err != nil {
		return nil, err
	}
	// Like pg_dump: hold ACCESS SHARE locks so no table changes shape or
	// disappears while the dump reads it.
	if len(p.tables) > 0 {
		names := make([]string, len(p.tables))
		for i, t := range p.tables {
			names[i] = t.qualified()
		}
		if _, err := conn.Exec(ctx, "LOCK TABLE "+strings.Join(names, ", ")+" IN ACCESS SHARE MODE"); err != nil {
			return nil, fmt.Errorf("lock tables: %w", err)
		}
	}
	if err := checkUnsupported(ctx, conn, schemaOIDs, p.tables); err != nil {
		return nil, err
	}

	for _, s := range schemas {
		p.preData = append(p.preData, object{Kind: "SCHEMA", Schema: s.name, Name: s.name, SQL: "CREATE SCHEMA " + ident(s.name)})
		if s.comment != nil && !(s.name == "public" && *s.comment == "standard public schema") {
			p.preData = append(p.preData, object{Kind: "COMMENT", Schema: s.name, Name: s.name, SQL: commentSQL("SCHEMA "+ident(s.name), s.comment)})
		}
	}
	exts, err := readExtensions(ctx, conn, schemaOIDs)
	if err != nil {
		return nil, err
	}
	for _, e := range exts {
		p.preData = append(p.preData, object{Kind: "EXTENSION", Schema: e.schema, Name: e.name,
			SQL: "CREATE EXTENSION IF NOT EXISTS " + ident(e.name) + " WITH SCHEMA " + ident(e.schema)})
	}
	types, err := readTypes(ctx, conn, schemaOIDs)
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		stmts, err := typeDDL(ctx, conn, t, version)
		if err != nil {
			return nil, err
		}
		for _, s := range stmts {
			p.preData = append(p.preData, object{Kind: "TYPE", Schema: t.schema, Name: t.name, SQL: s})
		}
	}

	seqs, err := readSequences(ctx, conn, schemaOIDs)
	if err != nil {
		return nil, err
	}
	byOID := tableByOID(p.tables)
	identity := map[[2]uint32]*sequenceDef{}
	var owned []object
	for i := range seqs {
		s := &seqs[i]
		if s.ownerTable != 0 && byOID[s.ownerTable] == nil {
			continue // owned by a table left out of the dump
		}
		p.sequences = append(p.sequences, *s)
		if s.identity {
			identity[[2]uint32{s.ownerTable, uint32(s.ownerColumnNum)}] = s
			continue
		}
		p.preData = append(p.preData, sequenceDDL(s)...)
		if s.ownerTable != 0 {
			owner := byOID[s.ownerTable]
			owned = append(owned, object{Kind: "SEQUENCE OWNED BY", Schema: s.schema, Name: s.name,
				SQL: "ALTER SEQUENCE " + qualified(s.schema, s.name) + " OWNED BY " + owner.qualified() + "." + ident(s.ownerColumn)})
		}
	}
	for _, t := range p.tables {
		p.preData = append(p.preData, tableDDL(t, identity)...)
		st := streamTable{Schema: t.schema, Name: t.name, Columns: t.copyColumns(), NoData: !t.dumpData, algo: checksumXXH3}
		if t.dumpData && !opts.TextCopy {
			st.Format = t.copyFormat()
		}
		p.header.Tables = append(p.header.Tables, st)
	}
	p.preData = append(p.preData, owned...)

	if p.constraints, err = readConstraints(ctx, conn, p.tables); err != nil {
		return nil, err
	}
	if p.indexes, err = readIndexes(ctx, conn, p.tables); err != nil {
		return nil, err
	}
	if p.header.LastMigration, err = lastMigration(ctx, conn, p.tables); err != nil {
		return nil, err
	}
	return p, nil
}

// structure is the post-data that does not depend on the rows: keys and
// unique constraints, indexes, foreign keys.
func (p *plan) structure() []object {
	var out []object
	for _, k := range p.constraints {
		if k.kind != 'f' {
			out = append(out, constraintDDL(k)...)
		}
	}
	byOID := tableByOID(p.tables)
	for _, x := range p.indexes {
		out = append(out, indexDDL(x, byOID[x.table])...)
	}
	for _, k := range p.constraints {
		if k.kind == 'f' {
			out = append(out, constraintDDL(k)...)
		}
	}
	return out
}

// postData is what restore runs after the data: keys and unique constraints,
// indexes, foreign keys (structure), then sequence values (read now, after
// the data, so they are at least as far as any id the rows hold).
func (p *plan) postData(ctx context.Context, conn *pgx.Conn) ([]object, error) {
	out := p.structure()
	for i := range p.sequences {
		s := &p.sequences[i]
		if err := readSequenceValue(ctx, conn, s); err != nil {
			return nil, err
		}
		out = append(out, object{Kind: "SEQUENCE SET", Schema: s.schema, Name: s.name,
			SQL: "SELECT pg_catalog.setval(" + literal(qualified(s.schema, s.name)) + ", " + strconv.FormatInt(s.lastValue, 10) + ", " + strconv.FormatBool(s.isCalled) + ")"})
	}
	return out, nil
}

// lastMigration is the greatest id of assisted-service's `migrations` table
// (gormigrate ids are timestamps), "" when there is no such table or row.
func lastMigration(ctx context.Context, conn *pgx.Conn, tables []*tableDef) (string, error) {
	var found *tableDef
	for _, t := range tables {
		if t.name == "migrations" && (found == nil || t.schema == "public") {
			found = t
		}
	}
	if found == nil {
		return "", nil
	}
	hasID := false
	for _, c := range found.columns {
		hasID = hasID || c.name == "id"
	}
	if !hasID {
		return "", nil
	}
	var id *string
	err := conn.QueryRow(ctx, "SELECT max(id::text) FROM "+found.qualified()).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read last migration: %w", err)
	}
	if id == nil {
		return "", nil
	}
	return *id, nil
}
