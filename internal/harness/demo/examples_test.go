package demo

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	cmd := exec.Command("go", "list", "-deps", "./examples/...", "./internal/harness/demo")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/tfisolate/tfisolate/runner", "go list listed no example's dependencies")
	require.False(t, slices.Contains(deps, "testing"), "the examples link package testing")
}

// An example is copied without its offline.go: no other file of it may
// import a package under internal/, which a user's module cannot import.
func TestExamplesImportInternalOnlyInOfflineGo(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "examples", "*", "*.go"))
	require.NoError(t, err)
	examples := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		examples[filepath.Base(filepath.Dir(f))] = true
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			if strings.HasPrefix(path, "github.com/tfisolate/tfisolate/internal/") {
				require.Equal(t, "offline.go", filepath.Base(f), "%s imports %s", f, path)
			}
		}
	}
	require.Len(t, examples, 5, "want the five examples: %v", examples)
}
