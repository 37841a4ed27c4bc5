package sqlguard

import (
	"fmt"
	"strings"
)

// The one lexer of a stream's statements. It follows PostgreSQL's lexical
// rules (scan.l) for what a dump's statements hold: identifiers (bare, as
// written, or double-quoted, unescaped), string constants ('...', E'...',
// N'...', dollar-quoted), bit strings, numbers, operators, punctuation and
// parameters; white space and comments (nested /* */ too) lie between the
// tokens, which keep their byte spans. It refuses only what it cannot split
// with certainty (an unterminated quote or comment, Unicode escapes, a stray
// $, a byte no token starts with).
//
// Two readers use it. The fast path (fast.go) takes the tokens only when the
// text keeps to its narrow spelling (narrow.go); the staged restore's
// rewrite (bundle/pg, stagesql.go) edits the tokens that name a stream's
// schema, knowing exactly where each one lies.

// Kind is what a token is.
type Kind uint8

// The kinds of tokens.
const (
	Ident       Kind = iota // a bare identifier or keyword; Text as written
	QuotedIdent             // a double-quoted identifier; Text unescaped
	String                  // a string constant; Text its value; Prefix 'E', 'N', '$' or 0
	BitString               // B'...' or X'...'; Text its digits
	Number                  // digits, a point, an exponent; Text as written
	Op                      // an operator; Text as written
	Punct                   // ( ) [ ] , ; :
	Dot                     // .
	Cast                    // ::
	Param                   // $1, $2, ...
)

// Token is one token of a statement.
type Token struct {
	Kind Kind
	// Prefix of a string constant: 'E' (backslash escapes, whose value
	// Text only approximates), 'N', '$' (dollar-quoted), or 0 (plain).
	Prefix     byte
	Start, End int32 // byte span in the statement (which parseOne bounds)
	Text       string
}

// Ident returns an identifier's name as the server takes it: a bare one
// folded to lower case (ASCII), a quoted one as it is.
func (t Token) Ident() string {
	if t.Kind == Ident {
		return asciiLower(t.Text)
	}
	return t.Text
}

// maxLex is the longest text Lex splits: token offsets are 32 bits.
const maxLex = 1<<31 - 1

// LexError is text the lexer cannot split.
type LexError struct {
	Pos int // byte offset
	Why string
}

func (e *LexError) Error() string { return fmt.Sprintf("%s at byte %d", e.Why, e.Pos) }

// The classes of bytes, looked up in one table: the lexer's hot loop.
const (
	cIdentStart uint8 = 1 << iota // _ A-Z a-z, and every byte >= 0x80
	cDigit
	cDollar
	cOp    // opChars
	cPunct // ( ) [ ] , ; :
	cSpace
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			t[c] = cIdentStart
		case c >= '0' && c <= '9':
			t[c] = cDigit
		case c == '$':
			t[c] = cDollar
		case strings.IndexByte(opChars, byte(c)) >= 0:
			t[c] = cOp
		case strings.IndexByte("()[],;:", byte(c)) >= 0:
			t[c] = cPunct
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			t[c] = cSpace
		}
	}
	return t
}()

func isIdentStart(c byte) bool { return byteClass[c]&cIdentStart != 0 }

func isIdentCont(c byte) bool { return byteClass[c]&(cIdentStart|cDigit|cDollar) != 0 }

func isSpace(c byte) bool { return byteClass[c]&cSpace != 0 }

// opChars are the characters of operators (scan.l's op_chars).
const opChars = "+-*/<>=~!@#%^&|`?"

func isOpByte(c byte) bool { return byteClass[c]&cOp != 0 }

// Lex splits one statement into tokens (white space and comments are left
// out; the spans between tokens keep them). On an error it returns the
// tokens before the failure with it.
func Lex(s string) ([]Token, error) {
	if len(s) > maxLex {
		return nil, &LexError{Pos: maxLex, Why: "text too long"}
	}
	// A dump's statements average some 4.5 bytes a token.
	toks := make([]Token, 0, len(s)/4+8)
	bad := func(i int, why string) ([]Token, error) {
		return toks, &LexError{Pos: i, Why: why}
	}
	tok := func(k Kind, start, end int, text string) Token {
		return Token{Kind: k, Start: int32(start), End: int32(end), Text: text}
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
					return bad(i, "unterminated comment")
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
			val, end, ok := unquote(s, i, '"')
			if !ok {
				return bad(i, "unterminated quote")
			}
			if val == "" {
				return bad(i, "empty quoted identifier")
			}
			toks = append(toks, tok(QuotedIdent, i, end, val))
			i = end
		case c == '\'':
			val, end, ok := unquote(s, i, '\'')
			if !ok {
				return bad(i, "unterminated quote")
			}
			toks = append(toks, tok(String, i, end, val))
			i = end
		case (c == 'u' || c == 'U') && i+2 < len(s) && s[i+1] == '&' && (s[i+2] == '\'' || s[i+2] == '"'):
			return bad(i, "Unicode escapes")
		case (c == 'e' || c == 'E') && i+1 < len(s) && s[i+1] == '\'':
			val, end, ok := unescape(s, i+1)
			if !ok {
				return bad(i+1, "unterminated quote")
			}
			toks = append(toks, withPrefix(tok(String, i, end, val), 'E'))
			i = end
		case (c == 'n' || c == 'N' || c == 'b' || c == 'B' || c == 'x' || c == 'X') && i+1 < len(s) && s[i+1] == '\'':
			val, end, ok := unquote(s, i+1, '\'')
			if !ok {
				return bad(i+1, "unterminated quote")
			}
			t := withPrefix(tok(String, i, end, val), 'N')
			if c != 'n' && c != 'N' {
				t.Kind, t.Prefix = BitString, 0 // bit strings are never names
			}
			toks = append(toks, t)
			i = end
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentCont(s[j]) {
				j++
			}
			toks = append(toks, tok(Ident, i, j, s[i:j]))
			i = j
		case c == '$':
			j := i + 1
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				toks = append(toks, tok(Param, i, j, s[i:j]))
				i = j
				continue
			}
			for j < len(s) && s[j] != '$' && isIdentCont(s[j]) {
				j++
			}
			if j >= len(s) || s[j] != '$' {
				return bad(i, "stray $")
			}
			tag := s[i : j+1]
			k := strings.Index(s[j+1:], tag)
			if k < 0 {
				return bad(i, "unterminated dollar-quoted string")
			}
			end := j + 1 + k + len(tag)
			toks = append(toks, withPrefix(tok(String, i, end, s[j+1:j+1+k]), '$'))
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
			toks = append(toks, tok(Number, i, j, s[i:j]))
			i = j
		case c == '.':
			toks = append(toks, tok(Dot, i, i+1, "."))
			i++
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			toks = append(toks, tok(Cast, i, i+2, "::"))
			i += 2
		case byteClass[c]&cPunct != 0:
			toks = append(toks, tok(Punct, i, i+1, s[i:i+1]))
			i++
		case isOpByte(c):
			// An operator ends where a comment starts ("--" or "/*" at i
			// itself is a comment, handled above).
			j := i + 1
			for j < len(s) && isOpByte(s[j]) {
				if j+1 < len(s) && (s[j:j+2] == "--" || s[j:j+2] == "/*") {
					break
				}
				j++
			}
			toks = append(toks, tok(Op, i, j, s[i:j]))
			i = j
		default:
			return bad(i, fmt.Sprintf("unexpected byte %q", c))
		}
	}
	return toks, nil
}

func withPrefix(t Token, p byte) Token {
	t.Prefix = p
	return t
}

// unquote reads a quoted token starting at s[i] == q, where qq stands for
// one q; it returns the value and the end of the token. A value without a
// doubled quote is a slice of s.
func unquote(s string, i int, q byte) (string, int, bool) {
	j := i + 1
	for j < len(s) && s[j] != q {
		j++
	}
	if j >= len(s) {
		return "", 0, false
	}
	if j+1 >= len(s) || s[j+1] != q {
		return s[i+1 : j], j + 1, true
	}
	var b strings.Builder
	b.WriteString(s[i+1 : j])
	for {
		if j >= len(s) {
			return "", 0, false
		}
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				b.WriteByte(q)
				j += 2
				continue
			}
			return b.String(), j + 1, true
		}
		b.WriteByte(s[j])
		j++
	}
}

// unescape reads an E'...' constant whose quote is at s[i]: a backslash
// escapes the next byte (two quotes are one too). The value is exact for the
// simple escapes; others (octal, hex, Unicode) leave it approximate, and
// such a constant is never used as a name.
func unescape(s string, i int) (string, int, bool) {
	var b strings.Builder
	j := i + 1
	for {
		if j >= len(s) {
			return "", 0, false
		}
		switch s[j] {
		case '\\':
			if j+1 >= len(s) {
				return "", 0, false
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
			return b.String(), j + 1, true
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

// SplitQualified splits a regclass input the way PostgreSQL's
// stringToQualifiedNameList does: dot-separated parts, each unquoted
// (trimmed, lower-cased) or double-quoted.
func SplitQualified(s string) ([]string, bool) {
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
			val, end, ok := unquote(s, i, '"')
			if !ok || val == "" {
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
