package sqlguard

import (
	"strings"
	"unicode/utf8"
)

// A fast path for the statement check. PostgreSQL's grammar as WebAssembly
// (parse.go) costs seconds of CPU and hundreds of MB of memory to compile in
// every process, whatever the number of statements (docs/bundle-format.md
// has the measurements); most streams hold only the few dozen statements of
// assisted-service's schema, in the handful of shapes Dump writes for it.
//
// fastParse recognises exactly those shapes, in a deliberately narrow
// spelling, and builds the parse tree that PostgreSQL's parser builds for
// them (without "location" fields, which the checker ignores). The tree then
// goes through the same checker as a tree from the real parser: the fast path
// decides nothing about safety, it only saves the compilation. Whatever it
// does not recognise exactly (another statement, another spelling, a comment,
// a newline, an escape, a keyword where a name is expected, an operator it
// does not know, an ambiguous precedence) it leaves to the real parser.
// Beside it, fastStatementType names a statement's type from its leading
// words alone, for the few beginnings that fix it, so that the checker can
// refuse a type the entry cannot hold; it too decides nothing itself.
//
// That the trees are the real parser's is tested, not assumed:
// TestFastParse_SameTreeAsPostgreSQL and FuzzFastParse compare every tree
// fastParse builds with libpg_query's, and the keyword list below is checked
// against pg_get_keywords() of every PostgreSQL major the suite runs
// (test/pgtest).
//
// The tokens are the one lexer's (lex.go); narrow.go takes them only when
// the text keeps to the narrow spelling:
//   - tokens are separated by single spaces or by punctuation; no other
//     white space, no comments, no semicolon;
//   - keywords are upper case (CREATE, TABLE, ...), except the constants
//     true and false and the words of type names, which are lower case as
//     format_type writes them;
//   - names are double-quoted (any content but control characters, at most
//     63 bytes, "" for a quote) or bare: lower-case letters, digits and _,
//     not a PostgreSQL keyword other than an unreserved one (such words
//     mean the same as a quoted name wherever a name stands);
//   - the text is valid UTF-8;
//   - string constants are '...' with '' for a quote and no backslash or
//     control character, never directly after a word (no E'', B'', X'',
//     typed literals);
//   - numbers are plain decimal: digits, optionally a point and digits, no
//     leading zero, no exponent, not followed by a letter;
//   - in expressions every operator's operands are single terms (a
//     constant, a name, a call, an array, a cast or a parenthesised
//     expression), as pg_get_expr writes them, so precedence never decides
//     anything; AND and OR chains are of one operator.

// eof is the kind of the token past the last.
const eof Kind = 255

const maxFastTokens = 1 << 16

// errFast ends a fast parse that met something outside the narrow spelling.
type errFast struct{}

// fastParser walks the tokens; every method panics with errFast when the
// input is not one it recognises, and fastParse recovers.
type fastParser struct {
	toks  []Token
	pos   int
	depth int
}

// fastTokens lexes sql for the fast path: ok is false when the text is not
// valid UTF-8, does not lex, or leaves the narrow spelling.
func fastTokens(sql string) ([]Token, bool) {
	if !utf8.ValidString(sql) {
		return nil, false
	}
	toks, err := Lex(sql)
	if err != nil {
		return nil, false
	}
	return narrow(sql, toks)
}

// fastParse returns the statement's parse tree as a node wrapper, or false.
func fastParse(sql string) (stmt node, ok bool) {
	toks, ok := fastTokens(sql)
	if !ok {
		return nil, false
	}
	return fastParseTokens(toks)
}

// fastParseTokens is fastParse on fastTokens' tokens.
func fastParseTokens(toks []Token) (stmt node, ok bool) {
	return runFast(toks, func(p *fastParser) node {
		stmt := p.statement()
		if p.pos != len(p.toks) {
			p.fail()
		}
		return stmt
	})
}

// runFast runs read over the tokens; ok is false when read fails on them.
func runFast[T any](toks []Token, read func(p *fastParser) T) (out T, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(errFast); !is {
				panic(r)
			}
			var zero T
			out, ok = zero, false
		}
	}()
	return read(&fastParser{toks: toks}), true
}

// isText reports whether t is a token the parser compares by its text: a
// bare word, punctuation or an operator.
func isText(t Token) bool {
	switch t.Kind {
	case Ident, Punct, Dot, Op, Cast:
		return true
	}
	return false
}

func (p *fastParser) fail() { panic(errFast{}) }

func (p *fastParser) peek() Token {
	if p.pos >= len(p.toks) {
		return Token{Kind: eof}
	}
	return p.toks[p.pos]
}

func (p *fastParser) peekAt(n int) Token {
	if p.pos+n >= len(p.toks) {
		return Token{Kind: eof}
	}
	return p.toks[p.pos+n]
}

func (p *fastParser) next() Token {
	t := p.peek()
	if t.Kind == eof {
		p.fail()
	}
	p.pos++
	return t
}

// is reports whether the next token is the upper-case keyword, punctuation
// or operator text.
func (p *fastParser) is(text string) bool {
	t := p.peek()
	return isText(t) && t.Text == text
}

func (p *fastParser) accept(text string) bool {
	if p.is(text) {
		p.pos++
		return true
	}
	return false
}

func (p *fastParser) expect(words ...string) {
	for _, w := range words {
		if !p.accept(w) {
			p.fail()
		}
	}
}

// name reads a quoted name or a bare one that is a plain name.
func (p *fastParser) name() string {
	t := p.next()
	switch t.Kind {
	case QuotedIdent:
		return t.Text
	case Ident:
		if allLower(t.Text) && !nonUnreservedKeywords[t.Text] && len(t.Text) <= 63 {
			return t.Text
		}
	}
	p.fail()
	return ""
}

// list reads items separated by commas up to the closing ")"; the caller
// has read the "(".
func (p *fastParser) list(item func()) {
	for {
		item()
		if p.accept(")") {
			return
		}
		p.expect(",")
	}
}

func (p *fastParser) isName() bool {
	t := p.peek()
	return t.Kind == QuotedIdent || t.Kind == Ident && allLower(t.Text) && !nonUnreservedKeywords[t.Text]
}

// qualifiedName reads schema.name.
func (p *fastParser) qualifiedName() (string, string) {
	s := p.name()
	p.expect(".")
	return s, p.name()
}

func fnode(typ string, body node) node { return node{typ: body} }

func fstring(s string) node { return fnode("String", node{"sval": s}) }

func fstrings(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = fstring(s)
	}
	return out
}

func rangeVarNode(schema, name string, inh bool, persistence string) node {
	rv := node{"schemaname": schema, "relname": name, "relpersistence": persistence}
	if inh {
		rv["inh"] = true
	}
	return rv
}

func (p *fastParser) statement() node {
	switch {
	case p.is("CREATE"):
		p.next()
		switch {
		case p.accept("SCHEMA"):
			return fnode("CreateSchemaStmt", node{"schemaname": p.name()})
		case p.is("UNLOGGED") || p.is("SEQUENCE") || p.is("TABLE"):
			persistence := "p"
			if p.accept("UNLOGGED") {
				persistence = "u"
			}
			if p.accept("SEQUENCE") {
				return p.createSequence(persistence)
			}
			p.expect("TABLE")
			return p.createTable(persistence)
		case p.is("UNIQUE") || p.is("INDEX"):
			return p.createIndex()
		case p.accept("EXTENSION"):
			return p.createExtension()
		}
	case p.is("ALTER"):
		p.next()
		if p.accept("SEQUENCE") {
			return p.ownedBy()
		}
		p.expect("TABLE")
		return p.alterTableAddConstraint()
	case p.accept("SELECT"):
		return p.selectCall()
	case p.is("COMMENT"):
		return p.comment()
	}
	p.fail()
	return nil
}

// fastStatementType names the type of the statement PostgreSQL's grammar
// builds from sql, when the leading words alone decide it, without parsing
// the rest: the checker refuses a type its entry cannot hold before the
// grammar is compiled (a hostile stream's statements are mostly of such
// types). It holds only where the text is in the narrow spelling (so it is
// one statement: no semicolon, no comment) and for these beginnings, each
// of which the grammar (gram.y) builds into one type only, whatever follows,
// when the rest parses at all:
//
//	COPY                                     CopyStmt
//	DO                                       DoStmt
//	ALTER SYSTEM                             AlterSystemStmt
//	SET ROLE, SET SESSION                    VariableSetStmt
//	GRANT ... ON ... (ON before any TO)      GrantStmt (GRANT roles TO ... has no ON before TO)
//	CREATE ROLE                              CreateRoleStmt
//	CREATE [OR REPLACE] FUNCTION|PROCEDURE   CreateFunctionStmt
//	CREATE [OR REPLACE] [CONSTRAINT] TRIGGER CreateTrigStmt
//	CREATE EVENT TRIGGER                     CreateEventTrigStmt
//	CREATE TABLE name[.name] AS              CreateTableAsStmt
//
// A statement that does not parse is refused by the grammar anyway; this
// only names the refusal by its type instead. TestFastStatementType and
// FuzzFastParse compare every type it names with the grammar's.
func fastStatementType(sql string) (typ string, ok bool) {
	toks, ok := fastTokens(sql)
	if !ok {
		return "", false
	}
	return fastStatementTypeTokens(toks)
}

// fastStatementTypeTokens is fastStatementType on fastTokens' tokens.
func fastStatementTypeTokens(toks []Token) (typ string, ok bool) {
	return runFast(toks, (*fastParser).statementType)
}

func (p *fastParser) statementType() string {
	switch {
	case p.accept("COPY"):
		return "CopyStmt"
	case p.accept("DO"):
		return "DoStmt"
	case p.accept("ALTER"):
		p.expect("SYSTEM")
		return "AlterSystemStmt"
	case p.accept("SET"):
		if p.is("ROLE") || p.is("SESSION") {
			return "VariableSetStmt"
		}
	case p.accept("GRANT"):
		for _, t := range p.toks[p.pos:] {
			if t.Kind != Ident {
				continue
			}
			switch strings.ToUpper(t.Text) {
			case "ON":
				return "GrantStmt"
			case "TO":
				p.fail()
			}
		}
	case p.accept("CREATE"):
		orReplace := p.accept("OR")
		if orReplace {
			p.expect("REPLACE")
		}
		switch {
		case p.is("FUNCTION") || p.is("PROCEDURE"):
			return "CreateFunctionStmt"
		case p.is("TRIGGER") || p.is("CONSTRAINT") && p.peekIs(1, "TRIGGER"):
			return "CreateTrigStmt"
		case orReplace:
		case p.is("ROLE"):
			return "CreateRoleStmt"
		case p.is("EVENT") && p.peekIs(1, "TRIGGER"):
			return "CreateEventTrigStmt"
		case p.accept("TABLE"):
			p.name()
			if p.accept(".") {
				p.name()
			}
			p.expect("AS")
			return "CreateTableAsStmt"
		}
	}
	p.fail()
	return ""
}
