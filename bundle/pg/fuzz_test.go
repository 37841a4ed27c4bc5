package pg

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"testing"
	"unicode"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqlguard"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqltest"
	pgparser "github.com/wasilibs/go-pgquery/parser"
)

// oracleTop is, per entry kind, the statements a stream may hold: the
// fuzz targets' independent statement of the rule the checker enforces.
var oracleTop = map[string][]string{
	"SCHEMA": {"CreateSchemaStmt"}, "EXTENSION": {"CreateExtensionStmt"},
	"TYPE":     {"CreateEnumStmt", "CreateDomainStmt", "CreateRangeStmt", "CompositeTypeStmt", "AlterDomainStmt", "CommentStmt"},
	"SEQUENCE": {"CreateSeqStmt"}, "TABLE": {"CreateStmt"}, "TABLE OPTION": {"AlterTableStmt"},
	"CHECK CONSTRAINT": {"AlterTableStmt"}, "SEQUENCE OWNED BY": {"AlterSeqStmt"}, "COMMENT": {"CommentStmt"},
	"CONSTRAINT": {"AlterTableStmt"}, "FK CONSTRAINT": {"AlterTableStmt"}, "INDEX": {"IndexStmt"},
	"CLUSTER": {"AlterTableStmt"}, "REPLICA IDENTITY": {"AlterTableStmt"}, "SEQUENCE SET": {"SelectStmt"},
}

// oracleNodes are every parse node an accepted statement may contain.
var oracleNodes = setOf("CreateSchemaStmt", "CreateExtensionStmt", "CreateEnumStmt", "CreateDomainStmt",
	"CreateRangeStmt", "CompositeTypeStmt", "AlterDomainStmt", "CreateSeqStmt", "CreateStmt", "AlterTableStmt",
	"AlterTableCmd", "AlterSeqStmt", "CommentStmt", "IndexStmt", "SelectStmt", "ResTarget", "ReplicaIdentityStmt",
	"ColumnDef", "Constraint", "TypeName", "DefElem", "String", "Integer", "Float", "Boolean", "List", "RangeVar",
	"IndexElem", "CollateClause", "TypeCast", "A_Const", "A_Expr", "BoolExpr", "NullTest", "BooleanTest", "FuncCall",
	"ColumnRef", "A_ArrayExpr", "A_Indirection", "A_Indices", "CaseExpr", "CaseWhen", "CoalesceExpr", "MinMaxExpr",
	"SQLValueFunction")

// oracle re-parses an accepted entry on its own and checks, without the
// checker's code, that it is one statement of its kind made only of allowed
// nodes, calling only allowed functions.
func oracle(o object) error {
	out, err := pgparser.ParseToJSON(o.SQL)
	if err != nil {
		return fmt.Errorf("accepted SQL does not parse: %v", err)
	}
	var tree struct {
		Stmts []struct {
			Stmt map[string]any `json:"stmt"`
		} `json:"stmts"`
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return err
	}
	if len(tree.Stmts) != 1 {
		return fmt.Errorf("accepted %d statements in one entry", len(tree.Stmts))
	}
	top := ""
	for k := range tree.Stmts[0].Stmt {
		top = k
	}
	ok := false
	for _, s := range oracleTop[o.Kind] {
		ok = ok || s == top
	}
	if !ok {
		return fmt.Errorf("accepted a %s in a %q entry", top, o.Kind)
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				if k != "" && unicode.IsUpper(rune(k[0])) {
					if !oracleNodes[k] {
						return fmt.Errorf("accepted a %s node", k)
					}
					if k == "FuncCall" {
						fc, _ := child.(map[string]any)
						names, _ := fc["funcname"].([]any)
						last, _ := names[len(names)-1].(map[string]any)["String"].(map[string]any)["sval"].(string)
						if !sqlguard.IsBuiltinFunc(last) && last != "setval" && last != "uuid_generate_v4" &&
							last != "uuid_generate_v1" && last != "uuid_generate_v1mc" {
							return fmt.Errorf("accepted a call of %q", last)
						}
					}
				}
				if err := walk(child); err != nil {
					return err
				}
			}
		case []any:
			for _, child := range x {
				if err := walk(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(tree.Stmts[0].Stmt)
}

// FuzzSchemaReader adds one entry (kind, SQL) to the pre-data or post-data
// of a valid stream and reads it as restore and verify do. The reader must
// never panic, and whatever it accepts must pass the checker on its own and
// the independent oracle.
func FuzzSchemaReader(f *testing.F) {
	warmParser(f)
	for _, o := range append(append([]object(nil), goodPre...), goodPost...) {
		f.Add(o.Kind, o.SQL, false)
		f.Add(o.Kind, o.SQL, true)
	}
	for _, h := range sqltest.HostileEntries {
		f.Add(h.Entry.Kind, h.Entry.SQL, h.Post)
	}
	f.Fuzz(func(t *testing.T, kind, sql string, post bool) {
		evil := object{Kind: kind, Schema: "public", Name: "fuzz", SQL: sql}
		pre, postList := goodPre, goodPost
		if post {
			postList = append(append([]object(nil), goodPost...), evil)
		} else {
			pre = append(append([]object(nil), goodPre...), evil)
		}
		_, err := Verify(context.Background(), bytes.NewReader(writeStream(t, goodHeader(), pre, postList)))
		if err != nil {
			return
		}
		c, _ := newDDLChecker(goodHeader())
		if err := c.checkList(memberPreData, pre); err != nil {
			t.Fatalf("the reader accepted what the checker refuses: %v", err)
		}
		if err := c.checkList(memberPostData, postList); err != nil {
			t.Fatalf("the reader accepted what the checker refuses: %v", err)
		}
		if err := oracle(evil); err != nil {
			t.Fatalf("accepted %q entry %q: %v", kind, sql, err)
		}
	})
}

// FuzzStreamMembers feeds arbitrary header, pre-data and post-data members
// to the reader: it must never panic, and every statement of an accepted
// stream passes the oracle.
func FuzzStreamMembers(f *testing.F) {
	warmParser(f)
	h, _ := json.Marshal(goodHeader())
	pre, _ := json.Marshal(streamDDL{Objects: goodPre})
	post, _ := json.Marshal(streamDDL{Objects: goodPost})
	f.Add(h, pre, post)
	evil, _ := json.Marshal(streamDDL{Objects: []object{{Kind: "TABLE", Schema: "public", Name: "x", SQL: "COMMIT; CREATE ROLE evil SUPERUSER"}}})
	f.Add(h, evil, post)
	f.Fuzz(func(t *testing.T, header, preData, postData []byte) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, m := range []struct {
			name string
			body []byte
		}{{memberHeader, header}, {memberPreData, preData}, {memberPostData, postData}, {memberSummary, []byte(`{"tables":[]}`)}} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Mode: 0o600, Size: int64(len(m.body))}); err != nil {
				t.Fatal(err)
			}
			_, _ = tw.Write(m.body)
		}
		_ = tw.Close()
		if _, err := Verify(context.Background(), &buf); err != nil {
			return
		}
		for _, body := range [][]byte{preData, postData} {
			var d streamDDL
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatalf("accepted a member that does not decode: %v", err)
			}
			for _, o := range d.Objects {
				if err := oracle(o); err != nil {
					t.Fatalf("accepted entry %+v: %v", o, err)
				}
			}
		}
	})
}

// warmParser compiles the parser's WebAssembly module before the first input:
// that takes seconds, and the fuzzing engine takes an input that runs for
// 10 s as a hang. Only a fuzzing worker runs inputs under that watch: the
// coordinator process (which runs this function too, to collect the seeds,
// and never calls the fuzz function) and a plain test run skip it, which
// spares each fuzz target one compilation of the grammar under coverage
// instrumentation (5-15 s of CPU on a loaded machine).
func warmParser(f *testing.F) {
	if !fuzzWorker() {
		return
	}
	if _, err := pgparser.ParseToJSON("SELECT 1"); err != nil {
		f.Fatal("PostgreSQL's grammar does not parse SELECT 1")
	}
}

// fuzzWorker tells whether this process is a fuzzing worker: cmd/go starts
// those with the testing package's -test.fuzzworker flag.
func fuzzWorker() bool {
	fl := flag.Lookup("test.fuzzworker")
	return fl != nil && fl.Value.String() == "true"
}
