// Command bench runs kubectl-assisted's benchmarks against the reference tools
// (pg_dump/pg_restore, oras, cp) on the same data in the same run, and prints
// ratios. Run it with `make bench`, or `go run ./bench [NAME...]` from test/.
//
// A benchmark registers itself by name from its own file:
//
//	func init() { register("iso", "node ISO vs cp of the base ISO", benchISO) }
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
)

type benchmark struct {
	name, about string
	run         func(b *bench) error
}

var registry = map[string]benchmark{}

// register adds a benchmark; call it from an init function of its file.
func register(name, about string, run func(b *bench) error) {
	if _, dup := registry[name]; dup {
		panic("bench: benchmark " + name + " registered twice")
	}
	registry[name] = benchmark{name: name, about: about, run: run}
}

var strict = flag.Bool("strict", false, "exit non-zero when a benchmark misses one of its goals")

func main() {
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 {
		for n := range registry {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	if bin := os.Getenv("KUBECTL_ASSISTED_BIN"); bin != "" {
		if err := evictFromPageCache(bin); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
	}
	failed := false
	for _, name := range names {
		bm, ok := registry[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: no benchmark %q\n", name)
			os.Exit(2)
		}
		fmt.Printf("== %s: %s\n", bm.name, bm.about)
		b := newBench(bm.name)
		if err := b.runProtected(bm.run); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", name, err)
			failed = true
		}
		if b.missed > 0 {
			fmt.Printf("%s: %d goal(s) missed\n", name, b.missed)
			failed = failed || *strict
		}
	}
	if failed {
		os.Exit(1)
	}
}
