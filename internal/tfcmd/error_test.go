package tfcmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorLeadsWithTheCause: a failed terraform's error starts with its
// error diagnostic, not with a warning it printed first (the missing CLI
// config file of many CI images); the warning is kept after it.
func TestErrorLeadsWithTheCause(t *testing.T) {
	warning := "There are some problems with the CLI configuration:\n╷\n│ Warning: Unable to open CLI configuration file\n│\n│ The CLI configuration file at \"/x\" does not exist.\n╵\n"
	cause := "╷\n│ Error: error loading state: connection refused\n╵\n"
	e := &Error{Command: "apply", ExitCode: 1, Stderr: warning + "\n" + cause}
	got := e.Error()
	require.True(t, strings.HasPrefix(got, "terraform apply: exit status 1: ╷\n│ Error: error loading state"), got)
	require.Contains(t, got, "Unable to open CLI configuration file")
	// Plain (-no-color, no frame) and with nothing before: unchanged order.
	e = &Error{Command: "plan", ExitCode: 1, Stderr: "Warning: x\n\nError: boom\n"}
	require.True(t, strings.HasPrefix(e.Error(), "terraform plan: exit status 1: Error: boom"), e.Error())
	e = &Error{Command: "plan", ExitCode: 1, Stderr: "Error: boom\n"}
	require.Equal(t, "terraform plan: exit status 1: Error: boom", e.Error())
}

// TestErrorFields: the fields a caller reads, the cause unwrapped, the
// arguments after the subcommand never in the message (a -var may be a
// secret), and what counts as a possible change of infrastructure.
func TestErrorFields(t *testing.T) {
	cause := context.Canceled
	e := &Error{Command: "apply", Args: []string{"apply", "-var", "password=hunter2"}, Err: cause}
	require.ErrorIs(t, e, context.Canceled)
	require.NotContains(t, e.Error(), "hunter2")
	require.Equal(t, "terraform apply: context canceled", e.Error())
	var got *Error
	require.ErrorAs(t, fmt.Errorf("unit x: %w", e), &got)
	require.Equal(t, []string{"apply", "-var", "password=hunter2"}, got.Args)

	for _, tc := range []struct {
		e    *Error
		want bool
	}{
		{&Error{Command: "apply", ExitCode: 1, Stderr: "Error: boom"}, false},
		{&Error{Command: "apply", ExitCode: 1, ChangeStarted: true}, true},
		{&Error{Command: "apply", ExitCode: 1, Stderr: "Error: Failed to save state"}, true},
		{&Error{Command: "apply", ExitCode: 1, Stderr: "written to errored.tfstate"}, true},
		{&Error{Command: "destroy", ExitCode: 1, Stderr: "Error: Failed to persist state to backend"}, true},
	} {
		require.Equal(t, tc.want, tc.e.MayHaveChanged(), "%+v", tc.e)
	}
}
