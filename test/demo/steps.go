package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Step statuses in the output and the summary.
const (
	statusOK     = "ok"
	statusFailed = "failed"
	statusNotRun = "not run"
)

// StepResult is one numbered step of the demo, as the summary reports it.
type StepResult struct {
	Number          int       `json:"number"`
	Name            string    `json:"name"`
	Title           string    `json:"title"`
	Status          string    `json:"status"`
	Error           string    `json:"error,omitempty"`
	DurationSeconds float64   `json:"durationSeconds"`
	Commands        []Command `json:"commands,omitempty"`
}

// Command is one command a step ran, as printed.
type Command struct {
	Line            string  `json:"line"`
	DurationSeconds float64 `json:"durationSeconds"`
	ExitCode        int     `json:"exitCode"`
}

// step is a numbered unit of work; needs names the steps it depends on.
type step struct {
	name, title string
	needs       []string
	run         func(s *stepRun) error
}

// stepRun is what a running step prints through and records into.
type stepRun struct {
	out    io.Writer
	result *StepResult
}

// say prints an indented line under the step's header.
func (s *stepRun) say(format string, args ...any) {
	for _, line := range strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n") {
		fmt.Fprintf(s.out, "      %s\n", line)
	}
}

// block prints command output, indented, with a blank line before and after
// it, so that it reads apart from the demo's own lines.
func (s *stepRun) block(text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(s.out, "        %s\n", line)
	}
}

// command prints a command line before it runs and returns a function that
// records how it went.
func (s *stepRun) command(line string) func(exitCode int) {
	fmt.Fprintf(s.out, "      $ %s\n", line)
	start := time.Now()
	return func(exitCode int) {
		s.result.Commands = append(s.result.Commands, Command{Line: line, DurationSeconds: seconds(time.Since(start)), ExitCode: exitCode})
	}
}

// runSteps runs the steps in order, each timed and numbered; a step whose
// dependency did not succeed is reported as not run, and the others go on.
func runSteps(out io.Writer, r *runner, steps []step) []StepResult {
	results := make([]StepResult, 0, len(steps))
	status := map[string]string{}
	for i, st := range steps {
		res := StepResult{Number: i + 1, Name: st.name, Title: st.title}
		fmt.Fprintf(out, "\n[%d/%d] %s\n", i+1, len(steps), st.title)
		var missing []string
		for _, n := range st.needs {
			if status[n] != statusOK {
				missing = append(missing, n)
			}
		}
		switch {
		case r.ctx.Err() != nil:
			res.Status, res.Error = statusNotRun, "interrupted"
			fmt.Fprintf(out, "      not run: interrupted\n")
		case len(missing) > 0:
			res.Status = statusNotRun
			res.Error = "needs " + strings.Join(missing, ", ") + ", which did not succeed"
			fmt.Fprintf(out, "      not run: %s\n", res.Error)
		default:
			start := time.Now()
			err := r.protect(func() error { return st.run(&stepRun{out: out, result: &res}) })
			res.DurationSeconds = seconds(time.Since(start))
			if err != nil && r.ctx.Err() != nil {
				err = fmt.Errorf("interrupted (%v)", err)
			}
			if err != nil {
				res.Status = statusFailed
				res.Error = err.Error()
				fmt.Fprintf(out, "      FAILED after %s: %s\n", fmtDuration(res.DurationSeconds), indentRest(res.Error))
			} else {
				res.Status = statusOK
				fmt.Fprintf(out, "      ok, %s\n", fmtDuration(res.DurationSeconds))
			}
		}
		status[st.name] = res.Status
		results = append(results, res)
	}
	return results
}

func indentRest(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n        ")
}

func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

func fmtDuration(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
}

// shellQuote renders args as a shell would need them typed.
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
