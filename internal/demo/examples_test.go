package demo

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	gomod := strings.TrimSpace(string(out))
	require.NotEmpty(t, gomod)
	return filepath.Dir(gomod)
}

// An example is a program a user copies into a host tool: neither it nor
// this package, its offline stand-in, links package testing (which the
// test provider and registry helpers once pulled in).
func TestExamplesDoNotLinkTesting(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./examples/...", "./internal/demo")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/tfisolate/tfisolate/runner", "go list listed no example's dependencies")
	require.False(t, slices.Contains(deps, "testing"), "the examples link package testing")
}
