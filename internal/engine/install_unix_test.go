//go:build unix

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// TestFindRefusesUnsafeInstallDir: a terraform waiting in an install dir
// that others can write to (or a binary others can write) is another
// user's possible plant; Find refuses it by name (ErrUnsafeInstallDir,
// with the path and mode) and never returns it, so it never runs.
func TestFindRefusesUnsafeInstallDir(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		name    string
		dirMode os.FileMode
		binMode os.FileMode
		culprit func(installDir string) string
	}{
		{"install dir writable by others", 0o777, 0o755, func(d string) string { return d }},
		{"install dir writable by its group", 0o775, 0o755, func(d string) string { return d }},
		{"binary writable by others", 0o700, 0o777, func(d string) string {
			return filepath.Join(d, engine.TerraformRelease, "terraform")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			installDir := filepath.Join(t.TempDir(), "tf")
			marker := filepath.Join(t.TempDir(), "ran")
			bin := writeScript(t, filepath.Join(installDir, engine.TerraformRelease), "terraform", "touch "+marker)
			require.NoError(t, os.Chmod(bin, tc.binMode))
			require.NoError(t, os.Chmod(installDir, tc.dirMode))
			_, err := engine.Find(context.Background(), engine.Terraform, installDir)
			require.ErrorIs(t, err, engine.ErrUnsafeInstallDir)
			require.ErrorContains(t, err, tc.culprit(installDir)+" (owner uid")
			require.NoFileExists(t, marker)
		})
	}
}

// TestMakeInstallDirIsPrivate: a missing install dir, and the missing
// dirs above it, are created 0700.
func TestMakeInstallDirIsPrivate(t *testing.T) {
	top := t.TempDir()
	installDir := filepath.Join(top, "cache", "tfisolate", "terraform")
	require.NoError(t, engine.MakeInstallDir(installDir))
	for _, d := range []string{filepath.Join(top, "cache"), filepath.Join(top, "cache", "tfisolate"), installDir} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
	}
	require.NoError(t, os.Chmod(filepath.Join(top, "cache"), 0o777))
	require.ErrorIs(t, engine.MakeInstallDir(installDir), engine.ErrUnsafeInstallDir)
}
