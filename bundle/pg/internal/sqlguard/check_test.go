package sqlguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqltest"
)

// The members of a stream the errors name.
const (
	memberHeader   = "header.json"
	memberPreData  = "pre-data.json"
	memberPostData = "post-data.json"
)

// header is what a stream's header gives the checker.
type header struct {
	schemas []string
	tables  []Name
}

// goodHeader and goodPre/goodPost are a small stream schema written the way
// Dump writes it (sqltest's corpus).
func goodHeader() *header {
	h := &header{schemas: append([]string(nil), sqltest.Schemas...)}
	for _, t := range sqltest.Tables {
		h.tables = append(h.tables, Name(t))
	}
	return h
}

var (
	goodPre  = entries(sqltest.GoodPre)
	goodPost = entries(sqltest.GoodPost)
)

func entries(in []sqltest.Entry) []Entry {
	out := make([]Entry, len(in))
	for i, e := range in {
		out[i] = Entry(e)
	}
	return out
}

// hostileEntries are sqltest's, with their entries as the checker takes them.
var hostileEntries = func() []hostile {
	var out []hostile
	for _, h := range sqltest.HostileEntries {
		out = append(out, hostile{h.Name, h.Post, Entry(h.Entry), h.Want})
	}
	return out
}()

type hostile struct {
	name string
	post bool
	obj  Entry
	want string
}

func checkAll(h *header, pre, post []Entry) error {
	c, err := NewChecker(memberHeader, h.schemas, h.tables)
	if err != nil {
		return err
	}
	if err := c.CheckPreData(memberPreData, pre); err != nil {
		return err
	}
	return c.CheckPostData(memberPostData, post)
}

func TestCheckAcceptsWhatDumpWrites(t *testing.T) {
	if err := checkAll(goodHeader(), goodPre, goodPost); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusesHostileStatements(t *testing.T) {
	for _, tt := range hostileEntries {
		t.Run(tt.name, func(t *testing.T) {
			pre := append([]Entry(nil), goodPre...)
			post := append([]Entry(nil), goodPost...)
			if tt.post {
				post = append(post, tt.obj)
			} else {
				// Where the statement would run first, and where it replaces the
				// table it claims to be.
				replaced := false
				for i, o := range pre {
					if o.Kind == tt.obj.Kind && o.Schema == tt.obj.Schema && o.Name == tt.obj.Name {
						pre[i], replaced = tt.obj, true
						break
					}
				}
				if !replaced {
					pre = append([]Entry{tt.obj}, pre...)
				}
			}
			err := checkAll(goodHeader(), pre, post)
			var ue *UnsafeSQLError
			if !errors.Is(err, ErrUnsafeSQL) || !errors.As(err, &ue) {
				t.Fatalf("accepted or wrong error: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestCheckHeader(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(h *header)
		want string
	}{
		{"catalog schema", func(h *header) { h.schemas = append(h.schemas, "pg_catalog") }, `schema "pg_catalog" is reserved`},
		{"table outside the schemas", func(h *header) {
			h.tables = append(h.tables, Name{Schema: "pg_catalog", Name: "pg_authid"})
		}, "which the header does not list"},
		{"table never created", func(h *header) {
			h.tables = append(h.tables, Name{Schema: "public", Name: "ghost"})
		}, "no entry creates it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := goodHeader()
			tt.edit(h)
			err := checkAll(h, goodPre, goodPost)
			if !errors.Is(err, ErrUnsafeSQL) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	// A table the header does not list cannot be created either.
	pre := append([]Entry(nil), goodPre...)
	pre = append(pre, Entry{Kind: "TABLE", Schema: "public", Name: "extra", SQL: `CREATE TABLE "public"."extra" (a int)`})
	if err := checkAll(goodHeader(), pre, goodPost); !errors.Is(err, ErrUnsafeSQL) || !strings.Contains(err.Error(), "not in the header's table list") {
		t.Fatalf("extra table: %v", err)
	}
}

// TestOperatorName checks the operator-name test against PostgreSQL's rule
// (scan.l: an operator is 1 to NAMEDATALEN-1 = 63 of + - * / < > = ~ ! @ # %
// ^ & | ` ?).
func TestOperatorName(t *testing.T) {
	for s, want := range map[string]bool{
		"+": true, "<->": true, "@@": true, "?|": true, "`": true, "!~~*": true,
		strings.Repeat("=", 63): true, strings.Repeat("=", 64): false,
		"": false, "a+": false, "+a": false, "+\n": false, " +": false, "+;": false, "+ +": false, ".": false,
	} {
		if got := operatorName(s); got != want {
			t.Errorf("operatorName(%q) = %v, want %v", s, got, want)
		}
	}
}
