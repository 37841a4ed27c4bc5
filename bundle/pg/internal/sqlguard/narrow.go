package sqlguard

// narrow reports whether the tokens Lex made of sql keep to the fast path's
// narrow spelling (fast.go lists it): single spaces between tokens, no
// comment or other white space; bare words of ASCII letters, digits and _,
// all lower or all upper case; quoted names of 1 to 63 bytes without control
// characters; plain '...' constants without a backslash or control
// character, never directly after a word or a number; plain decimal
// numbers; only the operators the fast parser knows; :: not followed by an
// operator or a colon; no semicolon, colon, parameter or prefixed string.
// Whatever it refuses goes to PostgreSQL's grammar.
//
// It returns the tokens the fast parser reads: toks, but for a number that
// starts with a point (.5), which it reads as a point and a number, as the
// narrow spelling splits it (the parser then refuses it: a point is
// followed by a name). The token count is bounded (maxFastTokens).
func narrow(sql string, toks []Token) ([]Token, bool) {
	split := false
	for _, t := range toks {
		if t.Kind == Number && t.Text[0] == '.' {
			split = true
			break
		}
	}
	if split {
		var out []Token
		for _, t := range toks {
			if t.Kind == Number && t.Text[0] == '.' {
				out = append(out, Token{Kind: Dot, Start: t.Start, End: t.Start + 1, Text: "."})
				t.Start, t.Text = t.Start+1, t.Text[1:]
			}
			out = append(out, t)
		}
		toks = out
	}
	if len(toks) == 0 || len(toks) > maxFastTokens+1 || len(toks) == maxFastTokens+1 && int(toks[maxFastTokens].End) < len(sql) {
		return nil, false
	}
	prev := 0
	for i, t := range toks {
		for k := prev; k < int(t.Start); k++ {
			if sql[k] != ' ' {
				return nil, false
			}
		}
		prev = int(t.End)
		// next reports whether the next token starts right where t ends.
		adjacent := i+1 < len(toks) && toks[i+1].Start == t.End
		var next Kind
		if adjacent {
			next = toks[i+1].Kind
		}
		switch t.Kind {
		case Ident:
			if !narrowWord(t.Text) || adjacent && (next == String || next == QuotedIdent) {
				return nil, false
			}
		case QuotedIdent:
			if len(t.Text) > 63 || hasControl(t.Text, false) {
				return nil, false
			}
		case String:
			if t.Prefix != 0 || hasControl(t.Text, true) {
				return nil, false
			}
		case Number:
			if !plainNumber(t.Text) || adjacent && (next == String || next == QuotedIdent) {
				return nil, false
			}
		case Op:
			switch t.Text {
			case "=", "<>", "<", ">", "<=", ">=", "+", "-", "*", "/", "||":
			default:
				return nil, false
			}
		case Cast:
			if adjacent && (next == Op || next == Cast || next == Punct && toks[i+1].Text == ":") {
				return nil, false
			}
		case Punct:
			switch t.Text {
			case "(", ")", ",", "[", "]":
			default:
				return nil, false
			}
		case Dot:
		default: // bit strings, parameters
			return nil, false
		}
	}
	for k := prev; k < len(sql); k++ {
		if sql[k] != ' ' {
			return nil, false
		}
	}
	return toks, true
}

// narrowWord reports whether w is a word of the narrow spelling: an ASCII
// letter or _ followed by letters, digits and _, all lower or all upper case.
func narrowWord(w string) bool {
	lower, upper := false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c == '_' || c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return w != "" && !(lower && upper)
}

// hasControl reports a control character in s, or (backslash) a backslash.
func hasControl(s string, backslash bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || backslash && c == '\\' {
			return true
		}
	}
	return false
}

// plainNumber reports digits without a leading zero (but 0 itself),
// optionally followed by a point and digits.
func plainNumber(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || s[0] == '0' && i > 1 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	j := i + 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return j > i+1 && j == len(s)
}

func allLower(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 'A' && w[i] <= 'Z' {
			return false
		}
	}
	return true
}
