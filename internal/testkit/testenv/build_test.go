package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// DropNestedBackends edits a copy of Terraform's module so that it builds
// from the module proxy's zip: the nested backends' imports and map
// entries leave init.go and their lines leave go.mod, the local and http
// backends stay; on a tree it already edited (or a release that moved
// things) it fails naming the line it could not find, never building
// something else.
func TestDropNestedBackends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mod, err := testenv.ModuleDir(ctx, "github.com/hashicorp/terraform", testenv.Terraform116.Version)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Terraform's source is required under CI=true: %v", err)
		}
		t.Skipf("skipping: Terraform's source is not available from the Go module proxy (%v)", err)
	}
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.CopyFS(src, os.DirFS(mod)))
	require.NoError(t, testenv.DropNestedBackends(src))

	initGo, err := os.ReadFile(filepath.Join(src, "internal", "backend", "init", "init.go"))
	require.NoError(t, err)
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	require.NoError(t, err)
	for _, b := range testenv.Terraform116.Lacks {
		require.NotContains(t, string(initGo), `"`+b+`":`, "backend %s's map entry", b)
	}
	require.NotContains(t, string(initGo), "remote-state/pg\"")
	require.NotContains(t, string(initGo), "remote-state/s3\"")
	require.Contains(t, string(initGo), "remote-state/http\"", "the http backend stays")
	require.Contains(t, string(initGo), `"local":`, "the local backend stays")
	require.NotContains(t, string(gomod), "internal/backend/remote-state/")
	require.NotContains(t, string(gomod), "internal/legacy")

	err = testenv.DropNestedBackends(src)
	require.Error(t, err, "a second pass finds nothing to drop")
	require.True(t, strings.Contains(err.Error(), "want exactly one line"), "%v", err)
}
