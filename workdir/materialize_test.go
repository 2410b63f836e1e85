package workdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A source file that changes while Prepare copies it, and changes back
// afterwards (git checkout, an editor's undo), must not leave the workdir
// holding the intermediate content behind a stamp that says "up to date".
func TestSourceChangedDuringCopyIsNotKept(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"a.tf": "# a\n", "b.tf": "# b v1\n"})
	bPath := filepath.Join(src, "b.tf")
	var mid bool
	m := newManager(t, withHook(func(p string) {
		if mid && filepath.Base(p) == "a.tf" {
			// a.tf is copied first (sorted); b.tf was hashed already and is
			// copied next, with this content.
			require.NoError(t, os.WriteFile(bPath, []byte("# b mid-edit\n"), 0o644))
		}
	}))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	mid = true
	w := prepare(t, m, s)
	mid = false
	require.Equal(t, "# b mid-edit\n", regularFiles(t, w.Dir)["b.tf"], "the copy took what the source held then")
	first := w.Digest
	require.NoError(t, w.Close())

	require.NoError(t, os.WriteFile(bPath, []byte("# b v1\n"), 0o644)) // back to what was hashed
	w = prepare(t, m, s)
	require.Equal(t, map[string]string{"a.tf": "# a\n", "b.tf": "# b v1\n"}, regularFiles(t, w.Dir))
	require.NotEqual(t, first, w.Digest, "the digest describes what was written, not what was hashed")
	require.NoError(t, w.Close())

	// And the stamp now matches: the next Prepare copies nothing.
	n := 0
	m.hook = func(string) { n++ }
	w = prepare(t, m, s)
	require.Zero(t, n)
}
