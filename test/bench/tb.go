package main

import (
	"fmt"
	"os"
	"testing"
)

// bench is what a benchmark gets: a testing.TB for the test harness whose
// Fatal stops the benchmark, and whose cleanups run when it ends.
type bench struct {
	testing.TB // nil: only the methods below are used by the harness
	name       string
	cleanups   []func()
	missed     int
}

type benchStop struct{ msg string }

func newBench(name string) *bench { return &bench{name: name} }

func (b *bench) Name() string                      { return "bench-" + b.name }
func (b *bench) Helper()                           {}
func (b *bench) Cleanup(f func())                  { b.cleanups = append(b.cleanups, f) }
func (b *bench) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (b *bench) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (b *bench) Error(args ...any)                 { b.Fatal(args...) }
func (b *bench) Errorf(format string, args ...any) { b.Fatalf(format, args...) }
func (b *bench) Fatal(args ...any)                 { panic(benchStop{fmt.Sprint(args...)}) }
func (b *bench) Fatalf(format string, args ...any) { panic(benchStop{fmt.Sprintf(format, args...)}) }
func (b *bench) Skip(args ...any)                  { b.Fatal(args...) }
func (b *bench) Skipf(format string, args ...any)  { b.Fatalf(format, args...) }
func (b *bench) Failed() bool                      { return false }
func (b *bench) Setenv(key, value string)          { _ = os.Setenv(key, value) }
func (b *bench) TempDir() string {
	d, err := os.MkdirTemp("", "kat-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// goal prints whether a measured value meets its goal and counts misses.
func (b *bench) goal(what string, ok bool) string {
	if ok {
		return "ok"
	}
	b.missed++
	return "MISSED (" + what + ")"
}

func (b *bench) runProtected(run func(*bench) error) (err error) {
	defer func() {
		for i := len(b.cleanups) - 1; i >= 0; i-- {
			b.cleanups[i]()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			stop, ok := r.(benchStop)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", stop.msg)
		}
	}()
	return run(b)
}
