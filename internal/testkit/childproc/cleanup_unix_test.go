//go:build unix

package childproc_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// A child still running when its test ends is killed and reaped: its PID
// names no process afterwards.
func TestCleanupEndsChild(t *testing.T) {
	var pid int
	t.Run("starts a child and leaves it running", func(t *testing.T) {
		p := childproc.Start(t, "hold")
		p.Expect(t, "ready")
		pid = p.PID()
		require.NoError(t, syscall.Kill(pid, 0), "the child runs")
	})
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the child outlived its test")
}
