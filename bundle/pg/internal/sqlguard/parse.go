package sqlguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	pgparser "github.com/wasilibs/go-pgquery/parser"
)

// The statements of a stream are checked on their parse trees, made by
// PostgreSQL's own grammar (libpg_query, run as WebAssembly by
// github.com/wasilibs/go-pgquery, so the binary needs no cgo). The tree comes
// as JSON: each node is an object with one key, the node's type, whose value
// holds the node's fields; fields at their zero value are left out.

// node is one parse-tree object: a node wrapper ({"Type": {...}}) or a node's
// body.
type node = map[string]any

// maxStatementBytes bounds one statement's text; a dump's longest statement is
// a CREATE TABLE of a few KiB.
const maxStatementBytes = 1 << 20

var parseMu sync.Mutex

// How many statements this process checked on a tree from the fast path
// (fast.go) and from PostgreSQL's grammar.
var fastParsed, grammarParsed atomic.Int64

// Stats reports how many statements this process has parsed with the fast
// path and how many with PostgreSQL's grammar (whose first use compiles it).
func Stats() (fast, grammar int64) { return fastParsed.Load(), grammarParsed.Load() }

// parseOne parses sql and returns its only statement as a node wrapper. More
// than one statement, none, or text that does not parse is an error. Where
// the fast path builds no tree but the leading words fix the statement's
// type (fastStatementType), holds may refuse that type: then the grammar is
// not compiled for it.
func parseOne(sql string, holds func(typ string) error) (stmt node, err error) {
	if len(sql) > maxStatementBytes {
		return nil, fmt.Errorf("the statement is %d bytes, more than the %d allowed", len(sql), maxStatementBytes)
	}
	for i := 0; i < len(sql); i++ {
		if sql[i] == 0 {
			return nil, fmt.Errorf("the statement holds a NUL byte")
		}
	}
	if toks, ok := fastTokens(sql); ok {
		if stmt, ok := fastParseTokens(toks); ok {
			fastParsed.Add(1)
			return stmt, nil
		}
		if typ, ok := fastStatementTypeTokens(toks); ok {
			if err := holds(typ); err != nil {
				return nil, err
			}
		}
	}
	grammarParsed.Add(1)
	defer func() {
		if r := recover(); r != nil {
			stmt, err = nil, fmt.Errorf("the statement cannot be parsed")
		}
	}()
	parseMu.Lock()
	out, err := pgparser.ParseToJSON(sql)
	parseMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("not valid PostgreSQL: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.UseNumber()
	var tree struct {
		Stmts []struct {
			Stmt node `json:"stmt"`
		} `json:"stmts"`
	}
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("the statement cannot be parsed: %v", err)
	}
	if len(tree.Stmts) != 1 {
		return nil, fmt.Errorf("the entry holds %d statements; exactly one is allowed", len(tree.Stmts))
	}
	return tree.Stmts[0].Stmt, nil
}

// unwrap returns a node wrapper's type and body.
func unwrap(v any) (string, node, bool) {
	m, ok := v.(node)
	if !ok || len(m) != 1 {
		return "", nil, false
	}
	for k, b := range m {
		body, ok := b.(node)
		if !ok {
			return "", nil, false
		}
		return k, body, true
	}
	return "", nil, false
}

// only refuses a body with fields other than allowed ("location" is always
// allowed).
func only(body node, what string, allowed ...string) error {
	for k := range body {
		if k == "location" {
			continue
		}
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%s with %s is not allowed", what, k)
		}
	}
	return nil
}

func str(body node, key string) string {
	s, _ := body[key].(string)
	return s
}

func list(body node, key string) []any {
	l, _ := body[key].([]any)
	return l
}

func obj(body node, key string) node {
	o, _ := body[key].(node)
	return o
}

// strings returns the values of a list of String nodes.
func stringNodes(items []any) ([]string, bool) {
	out := make([]string, 0, len(items))
	for _, it := range items {
		t, b, ok := unwrap(it)
		if !ok || t != "String" {
			return nil, false
		}
		if len(b) > 1 {
			return nil, false
		}
		if _, has := b["sval"]; len(b) == 1 && !has {
			return nil, false
		}
		out = append(out, str(b, "sval"))
	}
	return out, true
}

// intNode returns the value of an Integer node (the zero value is an empty body).
func intNode(v any) (int64, bool) {
	t, b, ok := unwrap(v)
	if !ok || t != "Integer" || only(b, "integer", "ival") != nil {
		return 0, false
	}
	if b["ival"] == nil {
		return 0, true
	}
	n, ok := b["ival"].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}
