package resources

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the order table in docs/restore.md")

const docPath = "../../docs/restore.md"

// orderTable renders Order as the markdown table of docs/restore.md.
func orderTable() string {
	var b strings.Builder
	b.WriteString("| # | kind | group | why here |\n|---|---|---|---|\n")
	for i, s := range Order {
		g := s.Group
		if g == "" {
			g = "core"
		}
		b.WriteString("| " + strconv.Itoa(i+1) + " | " + s.Kind + " | " + g + " | " + s.Reason + " |\n")
	}
	return b.String()
}

// TestOrderDoc keeps the documented order table identical to Order
// (go test -run TestOrderDoc ./restore/resources -update-docs rewrites it).
func TestOrderDoc(t *testing.T) {
	const begin, end = "<!-- order:begin -->\n", "<!-- order:end -->"
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the order markers", docPath)
	}
	want := s[:i+len(begin)] + orderTable() + s[j:]
	if *updateDocs {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if s != want {
		t.Fatalf("%s: the order table differs from resources.Order; run go test -run TestOrderDoc ./restore/resources -update-docs", docPath)
	}
}
