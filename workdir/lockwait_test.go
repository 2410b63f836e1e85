package workdir

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestWithLockWait: a Prepare that waits for the instance lock reports
// the wait as it starts, with the holder's note, and once more when it
// has the lock, with the time LockWait counts; one that finds the lock
// free reports nothing.
func TestWithLockWait(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t, WithLockRetry(time.Millisecond))
	s := Spec{Stack: "s", Instance: "i", Source: src}

	var free []LockWait
	first, err := m.Prepare(WithLockWait(context.Background(), func(w LockWait) { free = append(free, w) }), s)
	require.NoError(t, err)
	require.Empty(t, free, "the lock was free")

	waits := make(chan LockWait, 16)
	done := make(chan error, 1)
	var second *Workdir
	go func() {
		var err error
		second, err = m.Prepare(WithLockWait(context.Background(), func(w LockWait) { waits <- w }), s)
		done <- err
	}()
	w := <-waits
	require.False(t, w.Done)
	require.Equal(t, "s", w.Stack)
	require.Equal(t, "i", w.Instance)
	require.NotNil(t, w.Holder, "the holder recorded itself before the wait began")
	require.Equal(t, os.Getpid(), w.Holder.PID)
	require.NoError(t, first.Close())
	require.NoError(t, <-done)
	defer second.Close()
	// Every report was sent before Prepare returned: the last one is Done.
	var last LockWait
	for len(waits) > 0 {
		last = <-waits
	}
	require.True(t, last.Done)
	require.Equal(t, second.LockWait, last.Waited)
}
