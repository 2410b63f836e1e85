package runner

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers shared by the scenario tests (real terraform, see env_test.go).

// outputString returns the string output name of res.
func outputString(t *testing.T, res Result, name string) string {
	t.Helper()
	o, ok := res.Outputs[name]
	require.True(t, ok, "unit %s has no output %q (outputs: %v)", res.Unit, name, res.Outputs)
	var s string
	require.NoError(t, json.Unmarshal(o.Value, &s), "output %s = %s", name, o.Value)
	return s
}

// readFile returns the content of path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
