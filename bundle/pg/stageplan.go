package pg

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// The plan of a staged restore (staged.go): the stream's statements
// rewritten to name the staging schemas (stagesql.go), the post-data grouped
// by table, and the check of the rewritten statements.

// stagePlan is how one stream is restored through staging schemas.
type stagePlan struct {
	// schemas are the header's, stage maps each to its staging schema.
	schemas []string
	stage   map[string]string
	// pre is the pre-data to run in the staging schemas (rewritten), without
	// the entries in deferred: CREATE SCHEMA and COMMENT ON SCHEMA, run as
	// they are in the final transaction.
	pre, deferred []object
	// trial is the early post-data, rewritten, in stream order.
	trial []object
	// groups holds each table's post-data (rewritten, stream order), built
	// once the table is loaded; after is what follows the first entry of no
	// single table (foreign keys), run after every group.
	groups map[qname][]object
	after  []object
	// A table is analyzed as soon as it is loaded, before its index builds
	// (ANALYZE and CREATE INDEX lock each other out), unless it has an index
	// on an expression, whose statistics ANALYZE gathers only once it
	// exists: after its group (lateAnalyze) or after the after list
	// (afterAnalyze).
	lateAnalyze, afterAnalyze map[qname]bool
}

// newStagePlan rewrites the stream's statements for staging, or says why the
// stream cannot be staged.
func newStagePlan(sr *streamReader, pre []object) (*stagePlan, error) {
	h := &sr.header
	if sr.early == nil {
		return nil, fmt.Errorf("the stream (format %s) carries no early copy of its post-data, which format 1.2 adds", h.Version)
	}
	id := sha256.New()
	fmt.Fprintf(id, "%s\x00%d\x00", h.ServerVersion, len(pre))
	for _, t := range h.Tables {
		fmt.Fprintf(id, "%s\x00%s\x00", t.Schema, t.Name)
	}
	for _, o := range pre {
		fmt.Fprintf(id, "%s\x00", o.SQL)
	}
	tag := hex.EncodeToString(id.Sum(nil))[:12]
	p := &stagePlan{schemas: h.Schemas, stage: map[string]string{}, groups: map[qname][]object{},
		lateAnalyze: map[qname]bool{}, afterAnalyze: map[qname]bool{}}
	for i, s := range h.Schemas {
		p.stage[s] = stagingPrefix + tag + "_" + strconv.Itoa(i+1)
	}
	w := &stageRewriter{to: p.stage}
	for i, o := range pre {
		if o.Kind == "EXTENSION" {
			return nil, fmt.Errorf("%w: it creates extension %s, which would have to exist before its staging schema", errNotStageable, o.Name)
		}
		toks, err := lexSQL(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("pre-data entry %d: %w", i+1, err)
		}
		if w := leadingWords(toks, 3); o.Kind == "SCHEMA" || (w[0] == "comment" && w[1] == "on" && w[2] == "schema") {
			p.deferred = append(p.deferred, o)
			continue
		}
		sql, err := w.rewrite(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("pre-data entry %d: %w", i+1, err)
		}
		o.SQL = sql
		p.pre = append(p.pre, o)
	}
	tables := map[qname]bool{}
	for _, t := range h.Tables {
		tables[qname{t.Schema, t.Name}] = true
	}
	indexTable := map[qname]qname{}
	cut := false
	for i, o := range sr.early {
		sql, err := w.rewrite(o.SQL)
		if err != nil {
			return nil, fmt.Errorf("post-data entry %d: %w", i+1, err)
		}
		staged := o
		staged.SQL = sql
		p.trial = append(p.trial, staged)
		t, ok := postDataTable(o.SQL, indexTable)
		ok = ok && tables[t]
		if ok && (o.Kind == "INDEX" || o.Kind == "CONSTRAINT") {
			indexTable[qname{o.Schema, o.Name}] = t
		}
		expr := (o.Kind == "INDEX" || o.Kind == "CONSTRAINT") && indexedExpression(o.Kind, o.SQL)
		if !cut && ok && o.Kind != "FK CONSTRAINT" {
			p.groups[t] = append(p.groups[t], staged)
			if expr {
				p.lateAnalyze[t] = true
			}
			continue
		}
		// From the first foreign key (or entry of no single table) on,
		// everything runs after every table's group, in stream order.
		cut = true
		p.after = append(p.after, staged)
		if expr {
			if !ok {
				return nil, fmt.Errorf("%w: post-data entry %d indexes an expression of a table it does not name plainly", errNotStageable, i+1)
			}
			p.afterAnalyze[t] = true
		}
	}
	if err := p.recheck(h); err != nil {
		return nil, err
	}
	return p, nil
}

// recheck runs the statement checker again over the rewritten statements,
// as if the staging schemas were the stream's: the rewrite works on tokens,
// not on the checked tree, and what runs on the server must have passed the
// checker as it is, not only before the rewrite. A rewritten statement the checker
// refuses makes the stream unfit for staging (the one-transaction restore
// runs the statements as they were checked).
func (p *stagePlan) recheck(h *streamHeader) error {
	sh := &streamHeader{Format: h.Format, Version: h.Version, Schemas: p.stageSchemas()}
	for _, t := range h.Tables {
		sh.Tables = append(sh.Tables, streamTable{Schema: p.stage[t.Schema], Name: t.Name, Columns: t.Columns, NoData: t.NoData})
	}
	c, err := newDDLChecker(sh)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotStageable, err)
	}
	staged := func(objs []object) []object {
		out := make([]object, len(objs))
		for i, o := range objs {
			if s, ok := p.stage[o.Schema]; ok {
				o.Schema = s
			}
			out[i] = o
		}
		return out
	}
	if err := c.checkList(memberPreData, staged(p.pre)); err != nil {
		return fmt.Errorf("%w: the rewritten pre-data does not pass the statement check: %v", errNotStageable, err)
	}
	if err := c.checkList(memberPostData, staged(p.trial)); err != nil {
		return fmt.Errorf("%w: the rewritten post-data does not pass the statement check: %v", errNotStageable, err)
	}
	return nil
}

func (p *stagePlan) stagedName(schema, name string) string { return qualified(p.stage[schema], name) }

func (p *stagePlan) stageSchemas() []string {
	out := make([]string, len(p.schemas))
	for i, s := range p.schemas {
		out[i] = p.stage[s]
	}
	return out
}
