package runner

import (
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
	e := &tfError{args: []string{"apply"}, exitCode: 1, msg: warning + "\n" + cause}
	got := e.Error()
	require.True(t, strings.HasPrefix(got, "terraform apply: exit status 1: ╷\n│ Error: error loading state"), got)
	require.Contains(t, got, "Unable to open CLI configuration file")
	// Plain (-no-color, no frame) and with nothing before: unchanged order.
	e = &tfError{args: []string{"plan"}, exitCode: 1, msg: "Warning: x\n\nError: boom\n"}
	require.True(t, strings.HasPrefix(e.Error(), "terraform plan: exit status 1: Error: boom"), e.Error())
	e = &tfError{args: []string{"plan"}, exitCode: 1, msg: "Error: boom\n"}
	require.Equal(t, "terraform plan: exit status 1: Error: boom", e.Error())
}
