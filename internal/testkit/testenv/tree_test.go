package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// WriteTree writes each file with its content under the dirs its slash
// path names.
func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	WriteTree(t, dir, map[string]string{"main.tf": "a", "modules/x/main.tf": "b"})
	for name, want := range map[string]string{"main.tf": "a", "modules/x/main.tf": "b"} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		require.NoError(t, err)
		require.Equal(t, want, string(b))
	}
}
