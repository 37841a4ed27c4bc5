package pg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg/internal/sqlguard"
)

// A staged restore creates the stream's objects in private staging schemas
// (one per schema of the header) and moves them into their real schemas in
// the final transaction. The stream's statements name their objects fully
// qualified ("public"."hosts", 'public.events_id_seq'::regclass), so they are
// rewritten to name the staging schemas instead. The rewrite works on tokens:
// a lexer that follows PostgreSQL's lexical rules finds every identifier
// that is the first part of a dotted name and names a stream schema, and
// every string constant cast to regclass whose qualified name starts with
// one; those tokens, and nothing else, are replaced. Everything it does not
// understand (Unicode escapes, regclass used any other way, extensions, an
// identifier too long) makes the stream unfit for staging, and the restore
// then runs in one transaction as before: a rewrite is never a guess.
//
// This does not use the SQL parser: the statements were checked with it (or
// its fast path) before; the rewrite only has to keep what they mean, and the
// staged restore checks the result on the server before any row is loaded
// (nothing created in, or depending on, the real schemas).

// errNotStageable means a statement cannot be rewritten for staging with
// certainty; the restore runs in one transaction instead.
var errNotStageable = errors.New("the statement cannot be staged")

// sqlToken is a token of the one lexer (internal/sqlguard, which the
// statement check's fast path uses too).
type sqlToken = sqlguard.Token

// lexSQL splits one statement into tokens for the rewrite: the lexer's,
// refused (errNotStageable) where it cannot lex, or where a bare identifier
// is longer than 63 bytes (the server would truncate it).
func lexSQL(s string) ([]sqlToken, error) {
	toks, err := sqlguard.Lex(s)
	for _, t := range toks {
		if t.Kind == sqlguard.Ident && len(t.Text) > 63 {
			return nil, fmt.Errorf("%w: identifier longer than 63 bytes at byte %d", errNotStageable, t.Start)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotStageable, err)
	}
	return toks, nil
}

// The classes of tokens the rewrite tells apart.
const (
	tokIdent  = iota // identifier or keyword
	tokString        // string constant (plain, E, N, dollar-quoted)
	tokDot           // .
	tokCast          // ::
	tokOther         // number, operator, punctuation, parameter, bit string
)

func class(t sqlToken) int {
	switch t.Kind {
	case sqlguard.Ident, sqlguard.QuotedIdent:
		return tokIdent
	case sqlguard.String:
		return tokString
	case sqlguard.Dot:
		return tokDot
	case sqlguard.Cast:
		return tokCast
	}
	return tokOther
}

// val is what the rewrite compares: an identifier's name (folded as the
// server folds it), a string constant's or bit string's value, nothing for
// the rest.
func val(t sqlToken) string {
	switch t.Kind {
	case sqlguard.Ident, sqlguard.QuotedIdent:
		return t.Ident()
	case sqlguard.String, sqlguard.BitString:
		return t.Text
	}
	return ""
}

// word reports whether t is the unquoted word w (lower case).
func word(t sqlToken, w string) bool { return t.Kind == sqlguard.Ident && t.Ident() == w }

// stageRewriter maps the stream's schemas to their staging schemas.
type stageRewriter struct {
	to map[string]string
}

// regTypes are the object-identifier types: a constant of one of them names
// an object, resolved when the statement runs.
var regTypes = setOf("regclass", "regtype", "regproc", "regprocedure", "regoper", "regoperator",
	"regconfig", "regdictionary", "regnamespace", "regrole", "regcollation")

// rewrite returns sql with every stream schema it names replaced by its
// staging schema, or errNotStageable.
func (w *stageRewriter) rewrite(sql string) (string, error) {
	toks, err := lexSQL(sql)
	if err != nil {
		return "", err
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for i, t := range toks {
		switch class(t) {
		case tokIdent:
			tval := t.Ident()
			if regTypes[tval] {
				// Only 'constant'::regclass (rewritten below) or
				// 'constant'::regconfig (text search configurations, which
				// a stream never creates) may appear.
				if !(i >= 2 && class(toks[i-1]) == tokCast && class(toks[i-2]) == tokString) &&
					!(i >= 4 && class(toks[i-1]) == tokDot && class(toks[i-2]) == tokIdent && toks[i-2].Ident() == "pg_catalog" &&
						class(toks[i-3]) == tokCast && class(toks[i-4]) == tokString) {
					return "", fmt.Errorf("%w: %s used other than as the cast of a constant", errNotStageable, tval)
				}
				if tval != "regclass" && tval != "regconfig" {
					return "", fmt.Errorf("%w: a %s constant", errNotStageable, tval)
				}
				if i+1 < len(toks) && class(toks[i+1]) == tokOther && sql[toks[i+1].Start:toks[i+1].End] == "[" {
					return "", fmt.Errorf("%w: a %s array", errNotStageable, tval)
				}
				continue
			}
			if (tval == "nextval" || tval == "setval" || tval == "currval") && i+2 < len(toks) && class(toks[i+2]) == tokString &&
				!(i+3 < len(toks) && class(toks[i+3]) == tokCast) {
				return "", fmt.Errorf("%w: %s of a constant without a cast", errNotStageable, tval)
			}
			stage, ok := w.to[tval]
			if !ok || i+1 >= len(toks) || class(toks[i+1]) != tokDot || (i > 0 && class(toks[i-1]) == tokDot) {
				continue
			}
			edits = append(edits, edit{int(t.Start), int(t.End), ident(stage)})
		case tokString:
			// 'name'::regclass or 'name'::pg_catalog.regclass
			j := i + 1
			if j >= len(toks) || class(toks[j]) != tokCast {
				continue
			}
			j++
			if j+2 < len(toks) && class(toks[j]) == tokIdent && toks[j].Ident() == "pg_catalog" && class(toks[j+1]) == tokDot {
				j += 2
			}
			if j >= len(toks) || class(toks[j]) != tokIdent || toks[j].Ident() != "regclass" {
				continue
			}
			if t.Prefix == 'E' || (i > 0 && class(toks[i-1]) == tokString) {
				return "", fmt.Errorf("%w: an escaped or continued regclass constant", errNotStageable)
			}
			parts, ok := sqlguard.SplitQualified(t.Text)
			if !ok || len(parts) > 2 {
				return "", fmt.Errorf("%w: regclass constant %q", errNotStageable, t.Text)
			}
			if len(parts) == 1 {
				continue // found through the (empty) search path: pg_catalog
			}
			if stage, ok := w.to[parts[0]]; ok {
				edits = append(edits, edit{int(t.Start), int(t.End), literal(ident(stage) + "." + ident(parts[1]))})
			}
		}
	}
	if len(edits) == 0 {
		return sql, nil
	}
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(sql[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(sql[last:])
	out := b.String()
	if err := w.sameTokens(toks, out); err != nil {
		return "", err
	}
	return out, nil
}

// sameTokens checks a rewrite: the new text lexes into the same tokens,
// where only stream schemas became staging schemas.
func (w *stageRewriter) sameTokens(before []sqlToken, out string) error {
	after, err := lexSQL(out)
	if err != nil {
		return err
	}
	if len(after) != len(before) {
		return fmt.Errorf("%w: the rewrite changed the token count", errNotStageable)
	}
	for i := range before {
		a, b := before[i], after[i]
		if class(a) != class(b) {
			return fmt.Errorf("%w: the rewrite changed a token", errNotStageable)
		}
		av, bv := val(a), val(b)
		if av == bv {
			continue
		}
		switch class(a) {
		case tokIdent:
			if w.to[av] != bv {
				return fmt.Errorf("%w: the rewrite changed identifier %q", errNotStageable, av)
			}
		case tokString:
			pa, _ := sqlguard.SplitQualified(av)
			pb, ok := sqlguard.SplitQualified(bv)
			if !ok || len(pa) != 2 || len(pb) != 2 || w.to[pa[0]] != pb[0] || pa[1] != pb[1] {
				return fmt.Errorf("%w: the rewrite changed constant %q", errNotStageable, av)
			}
		default:
			return fmt.Errorf("%w: the rewrite changed a token", errNotStageable)
		}
	}
	return nil
}

// leadingWords returns the first n unquoted words of a statement, lower-case
// ("" where there are fewer).
func leadingWords(toks []sqlToken, n int) []string {
	out := make([]string, n)
	for i := 0; i < n && i < len(toks); i++ {
		if toks[i].Kind == sqlguard.Ident {
			out[i] = toks[i].Ident()
		}
	}
	return out
}

// dottedName reads schema.name at toks[i]; ok is false if it is not one.
func dottedName(toks []sqlToken, i int) (qname, bool) {
	if i+2 >= len(toks) || class(toks[i]) != tokIdent || class(toks[i+1]) != tokDot || class(toks[i+2]) != tokIdent {
		return qname{}, false
	}
	if i+3 < len(toks) && class(toks[i+3]) == tokDot {
		return qname{}, false
	}
	return qname{toks[i].Ident(), toks[i+2].Ident()}, true
}

// postDataTable names the table a post-data statement works on (ALTER TABLE
// [ONLY] t, CREATE INDEX ... ON [ONLY] t, COMMENT ON CONSTRAINT c ON t,
// COMMENT ON INDEX i with i created on t earlier); ok is false when it names
// none, or another form.
func postDataTable(sql string, indexTable map[qname]qname) (qname, bool) {
	toks, err := lexSQL(sql)
	if err != nil {
		return qname{}, false
	}
	w := leadingWords(toks, 5)
	at := func(i int) (qname, bool) {
		if i < len(toks) && word(toks[i], "only") {
			i++
		}
		return dottedName(toks, i)
	}
	switch {
	case w[0] == "alter" && w[1] == "table":
		return at(2)
	case w[0] == "create" && (w[1] == "index" || w[1] == "unique" && w[2] == "index"):
		for i := 2; i < len(toks); i++ {
			if word(toks[i], "on") {
				return at(i + 1)
			}
		}
	case w[0] == "comment" && w[1] == "on" && w[2] == "constraint":
		// COMMENT ON CONSTRAINT name ON table
		if len(toks) > 4 && word(toks[4], "on") {
			return at(5)
		}
	case w[0] == "comment" && w[1] == "on" && w[2] == "index":
		if q, ok := dottedName(toks, 3); ok {
			t, ok := indexTable[q]
			return t, ok
		}
	}
	return qname{}, false
}

// indexedExpression reports whether an INDEX or CONSTRAINT statement indexes
// an expression (ANALYZE gathers statistics for those once the index
// exists): a parenthesis inside an index's column list, or any exclusion
// constraint. Unsure means yes.
func indexedExpression(kind, sql string) bool {
	toks, err := lexSQL(sql)
	if err != nil {
		return true
	}
	text := func(t sqlToken) string { return sql[t.Start:t.End] }
	switch kind {
	case "CONSTRAINT":
		for _, t := range toks {
			if word(t, "exclude") {
				return true
			}
		}
		return false
	case "INDEX":
		for i := 0; i+2 < len(toks); i++ {
			if word(toks[i], "using") && class(toks[i+2]) == tokOther && text(toks[i+2]) == "(" {
				depth := 0
				for _, t := range toks[i+2:] {
					if class(t) != tokOther {
						continue
					}
					switch text(t) {
					case "(":
						depth++
						if depth > 1 {
							return true
						}
					case ")":
						depth--
						if depth == 0 {
							return false
						}
					}
				}
				return true
			}
		}
		return true
	}
	return false
}

type qname struct{ schema, name string }

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
