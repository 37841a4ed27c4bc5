// Package clierr is the CLI's error type: an error, an optional recommendation
// (a runnable next step) and the process exit code it maps to.
package clierr

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// ErrSilent makes Execute exit with the wrapped code without printing anything;
// for commands that already reported (like diff(1) exiting 1 on differences).
var ErrSilent = errors.New("silent exit")

// Error is an error with what to do next and the exit code it maps to.
type Error struct {
	Err            error
	Recommendation string
	Code           int
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New wraps err with a recommendation; code 0 means ExitError.
func New(err error, recommendation string, code int) *Error {
	return &Error{Err: err, Recommendation: recommendation, Code: code}
}

// Silent returns an error that exits with code and prints nothing.
func Silent(code int) error { return &Error{Err: ErrSilent, Code: code} }

// Usage marks err as a usage error of cmd: exit code 2 and a pointer to --help.
func Usage(cmd *cobra.Command, err error) error {
	return &Error{
		Err:            err,
		Recommendation: fmt.Sprintf("See '%s --help' for usage and examples.", cmd.CommandPath()),
		Code:           ExitUsage,
	}
}

// Usagef is Usage with a formatted message.
func Usagef(cmd *cobra.Command, format string, args ...any) error {
	return Usage(cmd, fmt.Errorf(format, args...))
}

// ExitCode maps err to a process exit code.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) && e.Code != 0 {
		return e.Code
	}
	return ExitError
}

// Print writes err as "error: ..." and, when known, the recommendation on the
// next line.
func Print(w io.Writer, err error) {
	msg := err.Error()
	fmt.Fprintf(w, "error: %s\n", strings.TrimSpace(msg))
	var e *Error
	if errors.As(err, &e) && e.Recommendation != "" {
		fmt.Fprintln(w, e.Recommendation)
	}
}
