package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestKeepsLocked: a lock file that would drop a hash the instance's lock
// file has for a provider at the same version is refused by name; one
// that only adds hashes, or moves to another version, is not.
func TestKeepsLocked(t *testing.T) {
	lock := func(version string, hashes ...string) []byte {
		s := "provider \"" + testprovider.Source + "\" {\n  version = \"" + version + "\"\n  hashes = [\n"
		for _, h := range hashes {
			s += "    \"" + h + "\",\n"
		}
		return []byte(s + "  ]\n}\n")
	}
	a, b := "h1:AAAA=", "zh:0123"
	path := filepath.Join(t.TempDir(), lockFileName)
	require.NoError(t, keepsLocked(path, lock("1.0.0", a)), "no lock file yet")
	require.NoError(t, os.WriteFile(path, lock("1.0.0", a, b), 0o644))
	require.NoError(t, keepsLocked(path, lock("1.0.0", a, b, "h1:BBBB=")))
	require.NoError(t, keepsLocked(path, lock("1.1.0", "h1:CCCC=")))
	err := keepsLocked(path, lock("1.0.0", "h1:EVIL=", b))
	require.ErrorIs(t, err, ErrInit)
	require.ErrorContains(t, err, "leave out "+a)
	require.ErrorContains(t, err, path)
}
