package pg

import (
	"errors"
	"fmt"
	"strings"
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

type tokKind int

const (
	tokIdent  tokKind = iota // identifier or keyword; val is its name
	tokString                // string constant; val is its value
	tokDot                   // .
	tokCast                  // ::
	tokOther                 // number, operator, punctuation, parameter
)

type sqlToken struct {
	kind       tokKind
	start, end int // byte span in the statement
	val        string
	quoted     bool // a quoted identifier
	// escape: an E'...' constant (backslash escapes)
	escape bool
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentCont(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

const opChars = "+-*/<>=~!@#%^&|`?"

// lexSQL splits one statement into tokens (whitespace and comments are left
// out; the spans between tokens keep them). It refuses what it does not know.
func lexSQL(s string) ([]sqlToken, error) {
	var toks []sqlToken
	bad := func(i int, why string) error {
		return fmt.Errorf("%w: %s at byte %d", errNotStageable, why, i)
	}
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			depth := 0
			for {
				if i+1 >= len(s) {
					return nil, bad(i, "unterminated comment")
				}
				if s[i] == '/' && s[i+1] == '*' {
					depth++
					i += 2
					continue
				}
				if s[i] == '*' && s[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 {
						break
					}
					continue
				}
				i++
			}
		case c == '"':
			val, end, err := lexQuoted(s, i, '"')
			if err != nil {
				return nil, err
			}
			if val == "" {
				return nil, bad(i, "empty quoted identifier")
			}
			toks = append(toks, sqlToken{kind: tokIdent, start: i, end: end, val: val, quoted: true})
			i = end
		case c == '\'':
			val, end, err := lexQuoted(s, i, '\'')
			if err != nil {
				return nil, err
			}
			toks = append(toks, sqlToken{kind: tokString, start: i, end: end, val: val})
			i = end
		case (c == 'u' || c == 'U') && i+2 < len(s) && s[i+1] == '&' && (s[i+2] == '\'' || s[i+2] == '"'):
			return nil, bad(i, "Unicode escapes")
		case (c == 'e' || c == 'E') && i+1 < len(s) && s[i+1] == '\'':
			val, end, err := lexEscapeString(s, i+1)
			if err != nil {
				return nil, err
			}
			toks = append(toks, sqlToken{kind: tokString, start: i, end: end, val: val, escape: true})
			i = end
		case (c == 'n' || c == 'N' || c == 'b' || c == 'B' || c == 'x' || c == 'X') && i+1 < len(s) && s[i+1] == '\'':
			val, end, err := lexQuoted(s, i+1, '\'')
			if err != nil {
				return nil, err
			}
			kind := tokString
			if c != 'n' && c != 'N' {
				kind = tokOther // bit strings are never names
			}
			toks = append(toks, sqlToken{kind: kind, start: i, end: end, val: val})
			i = end
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentCont(s[j]) {
				j++
			}
			word := s[i:j]
			if len(word) > 63 {
				return nil, bad(i, "identifier longer than 63 bytes")
			}
			toks = append(toks, sqlToken{kind: tokIdent, start: i, end: j, val: asciiLower(word)})
			i = j
		case c == '$':
			j := i + 1
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				toks = append(toks, sqlToken{kind: tokOther, start: i, end: j})
				i = j
				continue
			}
			for j < len(s) && s[j] != '$' && isIdentCont(s[j]) {
				j++
			}
			if j >= len(s) || s[j] != '$' {
				return nil, bad(i, "stray $")
			}
			tag := s[i : j+1]
			k := strings.Index(s[j+1:], tag)
			if k < 0 {
				return nil, bad(i, "unterminated dollar-quoted string")
			}
			end := j + 1 + k + len(tag)
			toks = append(toks, sqlToken{kind: tokString, start: i, end: end, val: s[j+1 : j+1+k]})
			i = end
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			j := i
			for j < len(s) && (isIdentCont(s[j]) || s[j] == '.') && s[j] != '$' {
				// exponents carry a sign: 1e-5
				if (s[j] == 'e' || s[j] == 'E') && j+1 < len(s) && (s[j+1] == '+' || s[j+1] == '-') {
					j++
				}
				j++
			}
			toks = append(toks, sqlToken{kind: tokOther, start: i, end: j})
			i = j
		case c == '.':
			toks = append(toks, sqlToken{kind: tokDot, start: i, end: i + 1})
			i++
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			toks = append(toks, sqlToken{kind: tokCast, start: i, end: i + 2})
			i += 2
		case strings.IndexByte("()[],;:", c) >= 0:
			toks = append(toks, sqlToken{kind: tokOther, start: i, end: i + 1})
			i++
		case strings.IndexByte(opChars, c) >= 0:
			// An operator ends where a comment starts ("--" or "/*" at i
			// itself is a comment, handled above).
			j := i + 1
			for j < len(s) && strings.IndexByte(opChars, s[j]) >= 0 {
				if j+1 < len(s) && (s[j:j+2] == "--" || s[j:j+2] == "/*") {
					break
				}
				j++
			}
			toks = append(toks, sqlToken{kind: tokOther, start: i, end: j})
			i = j
		default:
			return nil, bad(i, fmt.Sprintf("unexpected byte %q", c))
		}
	}
	return toks, nil
}

// lexQuoted reads a quoted token starting at s[i] == q, where qq stands for
// one q; it returns the value and the end of the token.
func lexQuoted(s string, i int, q byte) (string, int, error) {
	var b strings.Builder
	j := i + 1
	for {
		if j >= len(s) {
			return "", 0, fmt.Errorf("%w: unterminated quote at byte %d", errNotStageable, i)
		}
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				b.WriteByte(q)
				j += 2
				continue
			}
			return b.String(), j + 1, nil
		}
		b.WriteByte(s[j])
		j++
	}
}

// lexEscapeString reads an E'...' constant whose quote is at s[i]: a
// backslash escapes the next byte (two quotes are one too). The value is exact for
// the simple escapes; others (octal, hex, Unicode) leave it approximate, and
// such a constant is never used as a name.
func lexEscapeString(s string, i int) (string, int, error) {
	var b strings.Builder
	j := i + 1
	for {
		if j >= len(s) {
			return "", 0, fmt.Errorf("%w: unterminated quote at byte %d", errNotStageable, i)
		}
		switch s[j] {
		case '\\':
			if j+1 >= len(s) {
				return "", 0, fmt.Errorf("%w: unterminated quote at byte %d", errNotStageable, i)
			}
			b.WriteByte(0) // marks an escape: never a valid name
			j += 2
			continue
		case '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				b.WriteByte('\'')
				j += 2
				continue
			}
			return b.String(), j + 1, nil
		}
		b.WriteByte(s[j])
		j++
	}
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for k := i; k < len(b); k++ {
				if b[k] >= 'A' && b[k] <= 'Z' {
					b[k] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// splitQualified splits a regclass input the way PostgreSQL's
// stringToQualifiedNameList does: dot-separated parts, each unquoted
// (trimmed, lower-cased) or double-quoted.
func splitQualified(s string) ([]string, bool) {
	var parts []string
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return nil, false
		}
		if s[i] == '"' {
			val, end, err := lexQuoted(s, i, '"')
			if err != nil || val == "" {
				return nil, false
			}
			parts = append(parts, val)
			i = end
		} else {
			j := i
			for j < len(s) && s[j] != '.' && !isSpace(s[j]) {
				if s[j] == '"' || s[j] == 0 {
					return nil, false
				}
				j++
			}
			if j == i {
				return nil, false
			}
			parts = append(parts, asciiLower(s[i:j]))
			i = j
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return parts, true
		}
		if s[i] != '.' {
			return nil, false
		}
		i++
	}
}

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
		switch t.kind {
		case tokIdent:
			if regTypes[t.val] {
				// Only 'constant'::regclass (rewritten below) or
				// 'constant'::regconfig (text search configurations, which
				// a stream never creates) may appear.
				if !(i >= 2 && toks[i-1].kind == tokCast && toks[i-2].kind == tokString) &&
					!(i >= 4 && toks[i-1].kind == tokDot && toks[i-2].kind == tokIdent && toks[i-2].val == "pg_catalog" &&
						toks[i-3].kind == tokCast && toks[i-4].kind == tokString) {
					return "", fmt.Errorf("%w: %s used other than as the cast of a constant", errNotStageable, t.val)
				}
				if t.val != "regclass" && t.val != "regconfig" {
					return "", fmt.Errorf("%w: a %s constant", errNotStageable, t.val)
				}
				if i+1 < len(toks) && toks[i+1].kind == tokOther && sql[toks[i+1].start:toks[i+1].end] == "[" {
					return "", fmt.Errorf("%w: a %s array", errNotStageable, t.val)
				}
				continue
			}
			if (t.val == "nextval" || t.val == "setval" || t.val == "currval") && i+2 < len(toks) && toks[i+2].kind == tokString &&
				!(i+3 < len(toks) && toks[i+3].kind == tokCast) {
				return "", fmt.Errorf("%w: %s of a constant without a cast", errNotStageable, t.val)
			}
			stage, ok := w.to[t.val]
			if !ok || i+1 >= len(toks) || toks[i+1].kind != tokDot || (i > 0 && toks[i-1].kind == tokDot) {
				continue
			}
			edits = append(edits, edit{t.start, t.end, ident(stage)})
		case tokString:
			// 'name'::regclass or 'name'::pg_catalog.regclass
			j := i + 1
			if j >= len(toks) || toks[j].kind != tokCast {
				continue
			}
			j++
			if j+2 < len(toks) && toks[j].kind == tokIdent && toks[j].val == "pg_catalog" && toks[j+1].kind == tokDot {
				j += 2
			}
			if j >= len(toks) || toks[j].kind != tokIdent || toks[j].val != "regclass" {
				continue
			}
			if t.escape || (i > 0 && toks[i-1].kind == tokString) {
				return "", fmt.Errorf("%w: an escaped or continued regclass constant", errNotStageable)
			}
			parts, ok := splitQualified(t.val)
			if !ok || len(parts) > 2 {
				return "", fmt.Errorf("%w: regclass constant %q", errNotStageable, t.val)
			}
			if len(parts) == 1 {
				continue // found through the (empty) search path: pg_catalog
			}
			if stage, ok := w.to[parts[0]]; ok {
				edits = append(edits, edit{t.start, t.end, literal(ident(stage) + "." + ident(parts[1]))})
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
		if a.kind != b.kind {
			return fmt.Errorf("%w: the rewrite changed a token", errNotStageable)
		}
		if a.val == b.val {
			continue
		}
		switch a.kind {
		case tokIdent:
			if w.to[a.val] != b.val {
				return fmt.Errorf("%w: the rewrite changed identifier %q", errNotStageable, a.val)
			}
		case tokString:
			pa, _ := splitQualified(a.val)
			pb, ok := splitQualified(b.val)
			if !ok || len(pa) != 2 || len(pb) != 2 || w.to[pa[0]] != pb[0] || pa[1] != pb[1] {
				return fmt.Errorf("%w: the rewrite changed constant %q", errNotStageable, a.val)
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
		if toks[i].kind == tokIdent && !toks[i].quoted {
			out[i] = toks[i].val
		}
	}
	return out
}

// dottedName reads schema.name at toks[i]; ok is false if it is not one.
func dottedName(toks []sqlToken, i int) (qname, bool) {
	if i+2 >= len(toks) || toks[i].kind != tokIdent || toks[i+1].kind != tokDot || toks[i+2].kind != tokIdent {
		return qname{}, false
	}
	if i+3 < len(toks) && toks[i+3].kind == tokDot {
		return qname{}, false
	}
	return qname{toks[i].val, toks[i+2].val}, true
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
		if i < len(toks) && toks[i].kind == tokIdent && !toks[i].quoted && toks[i].val == "only" {
			i++
		}
		return dottedName(toks, i)
	}
	switch {
	case w[0] == "alter" && w[1] == "table":
		return at(2)
	case w[0] == "create" && (w[1] == "index" || w[1] == "unique" && w[2] == "index"):
		for i := 2; i < len(toks); i++ {
			if toks[i].kind == tokIdent && !toks[i].quoted && toks[i].val == "on" {
				return at(i + 1)
			}
		}
	case w[0] == "comment" && w[1] == "on" && w[2] == "constraint":
		// COMMENT ON CONSTRAINT name ON table
		if len(toks) > 4 && toks[4].kind == tokIdent && !toks[4].quoted && toks[4].val == "on" {
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
	text := func(t sqlToken) string { return sql[t.start:t.end] }
	switch kind {
	case "CONSTRAINT":
		for _, t := range toks {
			if t.kind == tokIdent && !t.quoted && t.val == "exclude" {
				return true
			}
		}
		return false
	case "INDEX":
		for i := 0; i+2 < len(toks); i++ {
			if toks[i].kind == tokIdent && !toks[i].quoted && toks[i].val == "using" && toks[i+2].kind == tokOther && text(toks[i+2]) == "(" {
				depth := 0
				for _, t := range toks[i+2:] {
					if t.kind != tokOther {
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
