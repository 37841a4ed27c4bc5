package pg

import "testing"

// BenchmarkStageRewrite rewrites the statements of the good stream for
// staging (lexer, edits, the re-lex that checks them).
func BenchmarkStageRewrite(b *testing.B) {
	w := &stageRewriter{to: map[string]string{"public": "stg_1", "Mixed Schema": "stg_2"}}
	var all []object
	for _, o := range append(append([]object(nil), goodPre...), goodPost...) {
		if _, err := w.rewrite(o.SQL); err == nil {
			all = append(all, o) // not an extension's, which staging refuses
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, o := range all {
			if _, err := w.rewrite(o.SQL); err != nil {
				b.Fatal(err)
			}
		}
	}
}
