package engine_test

import (
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"
)

// lockFile takes an exclusive flock on path, as another process installing
// would, and returns its release.
func lockFile(t *testing.T, path string) func() {
	t.Helper()
	lk := flock.New(path)
	ok, err := lk.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	return func() { require.NoError(t, lk.Unlock()) }
}
