package tfcmd

import (
	"fmt"
	"regexp"
	"strings"
)

// Error is a terraform process that failed: it exited with a code that
// is not a success, or did not run or finish (then Err says why and
// errors.Is sees it: a context's error after an interrupt). Its message
// names the subcommand, never the arguments after it (a -var may be a
// secret), and leads with terraform's first error diagnostic.
type Error struct {
	// Command is the subcommand ("plan", "state").
	Command string
	// Args is the whole argument list; it may hold secrets: never log it.
	Args []string
	// ExitCode is terraform's exit code; 0 when it did not exit by itself.
	ExitCode int
	// Stderr is what terraform said about the failure: its stderr, and
	// the diagnostics of the machine-readable UI rendered as text.
	Stderr string
	// Err is the cause when terraform did not run or finish (an exec
	// error, a context's); nil for a plain non-zero exit.
	Err error
	// ChangeStarted: terraform had reported a resource operation or
	// provisioner starting before it failed: infrastructure may differ
	// from the state.
	ChangeStarted bool
}

// MayHaveChanged reports whether the failed terraform may have changed
// infrastructure or failed to save the state of a change: such a command
// must never be repeated by itself.
func (e *Error) MayHaveChanged() bool {
	return e.ChangeStarted || stateNotSavedRe.MatchString(e.Stderr)
}

// stateNotSavedRe matches terraform's and tofu's ways of saying a state
// write failed after an apply: what they applied is only in
// errored.tfstate (or in their output) now.
var stateNotSavedRe = regexp.MustCompile(`(?i)Failed to (save|persist|write) (the )?state|errored\.tfstate`)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("terraform")
	if e.Command != "" {
		b.WriteString(" " + e.Command)
	}
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, ": %v", e.Err)
	default:
		fmt.Fprintf(&b, ": exit status %d", e.ExitCode)
	}
	if m := strings.TrimSpace(errorFirst(e.Stderr)); m != "" {
		b.WriteString(": " + m)
	}
	return b.String()
}

// Unwrap returns the cause of a terraform that did not run or finish.
func (e *Error) Unwrap() error { return e.Err }

// firstErrorRe finds the first error diagnostic in what terraform said,
// plain or inside its box-drawing frame.
var firstErrorRe = regexp.MustCompile(`(?m)^[│╷ ]*Error: `)

// errorFirst puts terraform's first error diagnostic (its summary and
// detail, and what follows) ahead of whatever it printed before it, such
// as a warning about the CLI config: an error message leads with the
// cause.
func errorFirst(msg string) string {
	loc := firstErrorRe.FindStringIndex(msg)
	if loc == nil || strings.TrimSpace(msg[:loc[0]]) == "" {
		return msg
	}
	// Start the moved part at its frame's opening line, if it has one.
	start := loc[0]
	if i := strings.LastIndex(msg[:start], "╷"); i >= 0 && strings.TrimSpace(msg[i+len("╷"):start]) == "" {
		start = i
	}
	return strings.TrimSpace(msg[start:]) + "\n\n" + strings.TrimSpace(msg[:start])
}
