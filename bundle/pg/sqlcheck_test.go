package pg

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqltest"
)

// goodHeader and goodPre/goodPost are a small stream schema written the way
// Dump writes it (the corpus the statement check's tests share).
func goodHeader() *streamHeader {
	h := &streamHeader{Format: FormatName, Version: "1.1", Schemas: append([]string(nil), sqltest.Schemas...)}
	for _, t := range sqltest.Tables {
		h.Tables = append(h.Tables, streamTable{Schema: t.Schema, Name: t.Name, Columns: []string{"id"}})
	}
	return h
}

var (
	goodPre  = objects(sqltest.GoodPre)
	goodPost = objects(sqltest.GoodPost)
)

func objects(in []sqltest.Entry) []object {
	out := make([]object, len(in))
	for i, e := range in {
		out[i] = object(e)
	}
	return out
}

// TestVerifyRefusesUnsafeStreamBeforeData: Verify (and so bundle verify and
// restore's verification pass) refuses a stream whose pre-data or post-data
// holds a refused statement.
func TestVerifyRefusesUnsafeStream(t *testing.T) {
	for _, where := range []string{memberPreData, memberPostData} {
		pre, post := goodPre, goodPost
		evil := object{Kind: "TABLE OPTION", Schema: "public", Name: "everything", SQL: `ALTER TABLE ONLY "public"."everything" ALTER COLUMN "t" SET STATISTICS 5; CREATE ROLE evil SUPERUSER`}
		if where == memberPreData {
			pre = append(append([]object(nil), goodPre...), evil)
		} else {
			evil = object{Kind: "SEQUENCE SET", Schema: "public", Name: "child_id_seq", SQL: `COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned'`}
			post = append(append([]object(nil), goodPost...), evil)
		}
		stream := writeStream(t, goodHeader(), pre, post)
		_, err := Verify(context.Background(), bytes.NewReader(stream))
		if !errors.Is(err, ErrUnsafeSQL) || !strings.Contains(err.Error(), where) {
			t.Fatalf("%s: %v", where, err)
		}
	}
	if _, err := Verify(context.Background(), bytes.NewReader(writeStream(t, goodHeader(), goodPre, goodPost))); err != nil {
		t.Fatalf("good stream: %v", err)
	}
}

// writeStream writes a stream of empty tables with the given statements.
func writeStream(t testing.TB, h *streamHeader, pre, post []object) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw := newStreamWriter(&buf)
	sum := streamSummary{}
	for _, tb := range h.Tables {
		sum.Tables = append(sum.Tables, TableSummary{Schema: tb.Schema, Name: tb.Name, Checksum: newTableHash(checksumSHA256).sum()})
	}
	for _, step := range []func() error{
		func() error { return sw.json(memberHeader, h) },
		func() error { return sw.json(memberPreData, streamDDL{Objects: pre}) },
		func() error { return sw.json(memberPostData, streamDDL{Objects: post}) },
		func() error { return sw.json(memberSummary, sum) },
		sw.close,
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}
