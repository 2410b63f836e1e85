package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteTree writes files (slash paths relative to dir -> content) under
// dir, 0644, creating the dirs they need; a failure fails the test.
func WriteTree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatalf("testenv: write tree: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatalf("testenv: write tree: %v", err)
		}
	}
}
