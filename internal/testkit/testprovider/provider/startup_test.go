package provider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A start-up that meets only itself (K=1) records its start and its
// release, and gives the memory back before it serves.
func TestStartUpAllocatesAndReleases(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(StartAllocEnv, "32")
	t.Setenv(StartTogetherEnv, dir+":1")
	require.NoError(t, StartUp())
	self := procName(os.Getpid())
	require.FileExists(t, filepath.Join(dir, "start-"+self))
	require.FileExists(t, filepath.Join(dir, "done-"+self))
	require.True(t, alive(self))
	require.False(t, alive("1-0"), "a start time that is not the process's names another process")

	t.Setenv(StartTogetherEnv, "nocount")
	require.ErrorContains(t, StartUp(), StartTogetherEnv)
}
