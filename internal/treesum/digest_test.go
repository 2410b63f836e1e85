package treesum

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDigest: two copies of a tree made at different times (other
// stamps) have one digest; a changed byte, a changed mode, a renamed
// file or a changed symlink target each give another.
func TestDigest(t *testing.T) {
	mk := func(t *testing.T, edit func(dir string)) string {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte("abc"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "x.tf"), []byte("x"), 0o644))
		require.NoError(t, os.Symlink("main.tf", filepath.Join(dir, "link")))
		if edit != nil {
			edit(dir)
		}
		rec, err := Record(dir)
		require.NoError(t, err)
		return rec.Digest()
	}
	base := mk(t, nil)
	require.Regexp(t, `^treesum1:[0-9a-f]{64}$`, base)
	require.Equal(t, base, mk(t, nil), "the same content elsewhere, other stamps")
	for name, edit := range map[string]func(string){
		"content": func(d string) { require.NoError(t, os.WriteFile(filepath.Join(d, "main.tf"), []byte("abd"), 0o644)) },
		"mode":    func(d string) { require.NoError(t, os.Chmod(filepath.Join(d, "main.tf"), 0o755)) },
		"rename": func(d string) {
			require.NoError(t, os.Rename(filepath.Join(d, "sub", "x.tf"), filepath.Join(d, "sub", "y.tf")))
		},
		"target": func(d string) {
			require.NoError(t, os.Remove(filepath.Join(d, "link")))
			require.NoError(t, os.Symlink("sub", filepath.Join(d, "link")))
		},
	} {
		require.NotEqual(t, base, mk(t, edit), name)
	}
}
