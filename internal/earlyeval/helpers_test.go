package earlyeval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// writeTree writes files (slash-separated names relative to root, with
// their content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// inputsOf reads the root module in dir by rule with what g gives it.
func inputsOf(t *testing.T, dir string, rule modtree.Files, g Given) *Inputs {
	t.Helper()
	cfs, err := modtree.ReadConfig(dir, nil, rule)
	require.NoError(t, err)
	return New(cfs, dir, nil, g)
}
