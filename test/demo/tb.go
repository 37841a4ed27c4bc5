package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
)

// runner is the testing.TB that the demo hands to the test harness: Log goes
// to the demo's log, Cleanup registers what the end of the demo (or
// `make demo-clean`) undoes, and Fatal, Error and Skip stop the current step
// with an error instead of ending a test.
type runner struct {
	testing.TB // nil: only the methods below are used by the harness

	ctx context.Context
	log io.Writer

	mu       sync.Mutex
	cleanups []func()
}

// stop is what Fatal panics with; step recovers it into an error.
type stop struct{ msg string }

func newRunner(ctx context.Context, log io.Writer) *runner {
	return &runner{ctx: ctx, log: log}
}

func (r *runner) Name() string               { return "kubectl-assisted-demo" }
func (r *runner) Helper()                    {}
func (r *runner) Context() context.Context   { return r.ctx }
func (r *runner) Output() io.Writer          { return r.log }
func (r *runner) Log(args ...any)            { fmt.Fprintln(r.log, args...) }
func (r *runner) Logf(f string, args ...any) { fmt.Fprintf(r.log, f+"\n", args...) }
func (r *runner) Error(args ...any)          { r.Fatal(args...) }
func (r *runner) Errorf(f string, a ...any)  { r.Fatalf(f, a...) }
func (r *runner) Fail()                      { r.Fatal("failed") }
func (r *runner) FailNow()                   { r.Fatal("failed") }
func (r *runner) Fatal(args ...any)          { panic(stop{fmt.Sprint(args...)}) }
func (r *runner) Fatalf(f string, a ...any)  { panic(stop{fmt.Sprintf(f, a...)}) }
func (r *runner) Skip(args ...any)           { r.Fatal(args...) } // a missing component is a failure here
func (r *runner) Skipf(f string, a ...any)   { r.Fatalf(f, a...) }
func (r *runner) SkipNow()                   { r.Fatal("skipped") }
func (r *runner) Skipped() bool              { return false }
func (r *runner) Failed() bool               { return false }
func (r *runner) Attr(string, string)        {}
func (r *runner) Setenv(key, value string)   { _ = os.Setenv(key, value) }
func (r *runner) Chdir(dir string)           { _ = os.Chdir(dir) }
func (r *runner) ArtifactDir() string        { return r.TempDir() }

// TempDir makes a directory under TMPDIR (the demo's state directory), removed
// by the cleanups.
func (r *runner) TempDir() string {
	d, err := os.MkdirTemp("", "demo-")
	if err != nil {
		r.Fatal(err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// cleanup runs the registered cleanups, last first, once.
func (r *runner) cleanup() {
	r.mu.Lock()
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// protect runs f and turns a Fatal inside it into an error.
func (r *runner) protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s, ok := p.(stop)
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("%s", s.msg)
		}
	}()
	return f()
}
