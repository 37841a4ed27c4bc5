package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kubectl-assisted/kubectl-assisted"

// TestImportRules enforces the package rules of docs ARCHITECTURE: the work lives
// in cobra-free packages, day2 never touches PostgreSQL, and the binary stays free
// of k8s.io/kubectl and pkg/errors.
func TestImportRules(t *testing.T) {
	rules := []struct {
		pkgs      string   // go list pattern, relative to the module
		forbidden []string // import path prefixes
		direct    bool     // only our own imports, not those of dependencies
		allowed   []string // exceptions to forbidden (exact packages)
		except    []string // packages of pkgs the rule does not apply to
	}{
		{"./bundle/...", []string{"github.com/spf13/cobra", "github.com/spf13/pflag", module + "/plugin", module + "/restore", module + "/day2"}, false, nil, nil},
		{"./restore/...", []string{"github.com/spf13/cobra", "github.com/spf13/pflag", module + "/plugin", module + "/day2"}, false, nil, nil},
		// day2 shares the registry layer (one transport, auth-file order and
		// redaction) and nothing else of bundle.
		{"./day2/...", []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/jackc/pgx", module + "/plugin", module + "/bundle", module + "/restore"}, false, []string{module + "/bundle/registry"}, nil},
		// The layer codec (zstd frames, age payload, the read pipeline) is
		// the bundle format's plumbing: only the format's own package uses it.
		{"./bundle/...", []string{module + "/bundle/internal/codec"}, true, nil, []string{module + "/bundle"}},
		{"./...", []string{"k8s.io/kubectl"}, false, nil, nil},
		{"./...", []string{"github.com/pkg/errors", "github.com/hashicorp/go-multierror"}, true, nil, nil},
	}
	for _, r := range rules {
		t.Run(r.pkgs, func(t *testing.T) {
			for pkg, deps := range listDeps(t, r.pkgs, r.direct) {
				if slices.Contains(r.except, pkg) {
					continue
				}
				for _, d := range deps {
					if slices.Contains(r.allowed, d) {
						continue
					}
					for _, f := range r.forbidden {
						if d == f || strings.HasPrefix(d, f+"/") {
							t.Errorf("%s imports %s (forbidden for %s)", pkg, d, r.pkgs)
						}
					}
				}
			}
		})
	}
}

// TestLibrariesNeverPrint keeps bundle/, restore/ and day2/ silent: they report
// through writers, loggers and callbacks that the CLI hands them.
func TestLibrariesNeverPrint(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range []string{"bundle", "restore", "day2"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Error(err)
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				switch name := x.Name + "." + sel.Sel.Name; {
				case name == "os.Stdout", name == "os.Stderr",
					name == "fmt.Print", name == "fmt.Printf", name == "fmt.Println",
					x.Name == "log" && strings.HasPrefix(sel.Sel.Name, "Print"):
					t.Errorf("%s uses %s: library packages never print", path, name)
				}
				return true
			})
			return nil
		})
	}
}

func listDeps(t *testing.T, pattern string, direct bool) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", pattern)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	res := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if direct {
			res[p.ImportPath] = p.Imports
		} else {
			res[p.ImportPath] = p.Deps
		}
	}
	if len(res) == 0 {
		t.Fatalf("go list %s: no packages", pattern)
	}
	return res
}

// TestFileSizes keeps files readable (docs/architecture.md): no non-test Go
// file of the binary over 800 lines, and the CLI's files, one command or
// concern each, under 300.
func TestFileSizes(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == "test" || strings.HasPrefix(d.Name(), ".")) && rel != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("// Code generated")) {
			return nil
		}
		lines := bytes.Count(b, []byte("\n"))
		limit := 800
		if strings.HasPrefix(rel, "plugin"+string(filepath.Separator)) && !strings.Contains(rel[len("plugin/"):], string(filepath.Separator)) {
			limit = 300
		}
		if lines > limit {
			t.Errorf("%s has %d lines, more than %d: split it by concern", rel, lines, limit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
