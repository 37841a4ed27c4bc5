package sqlguard

import "testing"

// BenchmarkFastPath parses the statements a dump of assisted-service's
// schema holds, as the checker does (the fast path: lexer, narrow spelling,
// tree).
func BenchmarkFastPath(b *testing.B) {
	holds := func(string) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		for _, sql := range dumpedStatements {
			if _, err := parseOne(sql, holds); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRefusedByType checks the hostile entries whose leading words
// alone refuse them (no grammar).
func BenchmarkRefusedByType(b *testing.B) {
	var refused []hostile
	for _, h := range hostileEntries {
		if typ, ok := fastStatementType(h.obj.SQL); ok && entryHolds(h.obj.Kind, typ) != nil {
			refused = append(refused, h)
		}
	}
	if len(refused) == 0 {
		b.Fatal("no hostile entry is refused by its type")
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range refused {
			if _, err := parseOne(h.obj.SQL, func(typ string) error { return entryHolds(h.obj.Kind, typ) }); err == nil {
				b.Fatal("accepted")
			}
		}
	}
}
