// Command gotest reads `go test -json` on stdin and prints what a plain
// `go test` would (each package's ok/FAIL line, the output of failed tests,
// build errors), then a summary line "N passed, N failed, N skipped". Under
// CI=true a skipped test is a failure: it lists the skipped tests and their
// reasons and exits 1, so a component that quietly went missing cannot pass
// CI. It exits 1 too when any test or package failed.
//
//	go test -json ./... | go run ./tools/gotest
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	ci := strings.EqualFold(os.Getenv("CI"), "true") || os.Getenv("CI") == "1"
	out := map[string][]string{} // package/test -> output lines
	var skipped, failed []string
	passed := 0
	type timing struct {
		name    string
		elapsed float64
	}
	var slow []timing // top-level tests only
	pkgFailed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (a build error printed by go itself): pass it on.
			fmt.Println(string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Print(e.Output)
		case "build-fail":
			pkgFailed = true
		case "output":
			if e.Test == "" {
				// Package-level output: the ok/FAIL lines, panics, build output.
				if s := strings.TrimRight(e.Output, "\n"); s != "" && !strings.HasPrefix(s, "=== ") && s != "PASS" && !strings.HasPrefix(s, "--- PASS") {
					fmt.Println(s)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
		case "pass":
			if e.Test != "" {
				passed++
				delete(out, key)
				if !strings.Contains(e.Test, "/") {
					slow = append(slow, timing{strings.TrimPrefix(e.Package, "github.com/kubectl-assisted/kubectl-assisted/") + " " + e.Test, e.Elapsed})
				}
			}
		case "skip":
			if e.Test != "" {
				reason := ""
				for _, l := range out[key] {
					if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- SKIP") {
						reason = t
					}
				}
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason))
				delete(out, key)
			}
		case "fail":
			if e.Test == "" {
				pkgFailed = true
				continue
			}
			failed = append(failed, e.Package+" "+e.Test)
			fmt.Print(strings.Join(out[key], ""))
			delete(out, key)
		}
	}
	sort.Strings(skipped)
	// The slowest tests, so a run's time can be read off its log.
	if n := slowest(); n > 0 && len(slow) > 0 {
		sort.Slice(slow, func(i, j int) bool { return slow[i].elapsed > slow[j].elapsed })
		fmt.Printf("\nslowest tests:\n")
		for i := 0; i < n && i < len(slow); i++ {
			fmt.Printf("  %7.1fs  %s\n", slow[i].elapsed, slow[i].name)
		}
	}
	if len(skipped) > 0 {
		fmt.Printf("\n%d skipped test(s):\n", len(skipped))
		for _, s := range skipped {
			fmt.Println("  " + s)
		}
	}
	fmt.Printf("\n%d passed, %d failed, %d skipped\n", passed, len(failed), len(skipped))
	switch {
	case len(failed) > 0 || pkgFailed:
		os.Exit(1)
	case ci && len(skipped) > 0:
		fmt.Println("CI=true: a skipped test is a failure (a component or fixture the test needs is missing; make tools installs the components)")
		os.Exit(1)
	}
}

// slowest is how many of the slowest tests to list: GOTEST_SLOWEST, 10 by default.
func slowest() int {
	n := 10
	if v := os.Getenv("GOTEST_SLOWEST"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			n = 10
		}
	}
	return n
}
