package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// TestLockExcludesProcesses: four processes and two goroutines of this
// one, each with its own Locks on one dir, increment one counter file
// under one key's lock, reading and writing it in separate steps. Not
// one increment is lost: one holder at a time, across goroutines and
// processes.
func TestLockExcludesProcesses(t *testing.T) {
	dir := t.TempDir()
	locks, counter := filepath.Join(dir, "locks"), filepath.Join(dir, "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0"), 0o644))
	const procs, goroutines, times = 4, 2, 50
	var children []*childproc.Proc
	for range procs {
		children = append(children, startChild(t, "count", envLocks+"="+locks, envKey+"=k",
			envCounter+"="+counter, envTimes+"="+strconv.Itoa(times)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() { errs <- countUnderLock(NewLocks(locks, 0, time.Millisecond), "k", counter, times) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, c := range children {
		require.NoError(t, c.Wait())
	}
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa((procs+goroutines)*times), string(b))
	_, err = os.Stat(NewLocks(locks, 0, 0).Path("k"))
	require.NoError(t, err, "the lock file stays")
}

// TestLockWaitIsBounded: a key another process holds is waited for only
// as long as the context allows, with an error that says so; once that
// process lets go, the lock is taken.
func TestLockWaitIsBounded(t *testing.T) {
	dir := t.TempDir()
	locks, tmp := filepath.Join(dir, "locks"), filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	holder := startChild(t, "hold", envLocks+"="+locks, envTmp+"="+tmp, envKey+"=k")
	holder.Expect(t, "held")

	l := NewLocks(locks, 0, 0)
	waited := 0
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	unlock, err := l.Lock(ctx, "k", func() { waited++ })
	require.Nil(t, unlock)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "wait for "+l.Path("k")+", held by another process, gave up after")
	require.Equal(t, 1, waited)

	require.NoError(t, holder.Stdin.Close())
	require.NoError(t, holder.Wait())
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unlock, err = l.Lock(ctx, "k", nil)
	require.NoError(t, err)
	unlock()
}

// TestSweepFree: a process killed while it held a key's lock leaves its
// temp dir and no lock; SweepFree removes that leftover, leaves the one
// of a key a live process holds, and leaves names that are not the
// store's (no key, or a key without a lock file). Once the live holder
// is done, its key is swept too.
func TestSweepFree(t *testing.T) {
	dir := t.TempDir()
	locks, tmp := filepath.Join(dir, "locks"), filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	env := func(key string) []string {
		return []string{envLocks + "=" + locks, envTmp + "=" + tmp, envKey + "=" + key}
	}
	dead := startChild(t, "hold", env("dead")...)
	dead.Expect(t, "held")
	busy := startChild(t, "hold", env("busy")...)
	busy.Expect(t, "held")
	require.NoError(t, dead.Cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, dead.Wait())
	for _, name := range []string{"notours", "nolock.123.zip"} {
		require.NoError(t, os.WriteFile(filepath.Join(tmp, name), nil, 0o644))
	}

	l := NewLocks(locks, 0, 0)
	keyOf := func(name string) (string, bool) {
		k, _, ok := strings.Cut(name, ".")
		return k, ok
	}
	var swept []string
	sweep := func(key string) {
		swept = append(swept, key)
		SweepKey(tmp, key, func(_ string, err error) { require.NoError(t, err) })
	}
	l.SweepFree(tmp, keyOf, sweep)
	require.Equal(t, []string{"dead"}, swept)
	require.ElementsMatch(t, []string{"busy." + strconv.Itoa(busy.PID()) + ".d", "nolock.123.zip", "notours"}, names(t, tmp))

	require.NoError(t, busy.Stdin.Close())
	require.NoError(t, busy.Wait())
	swept = nil
	l.SweepFree(tmp, keyOf, sweep)
	require.Equal(t, []string{"busy"}, swept)
	require.ElementsMatch(t, []string{"nolock.123.zip", "notours"}, names(t, tmp))
}

// TestCommitAndRemoveAll: Commit puts a temp tree in place whole;
// RemoveAll removes a tree with a read-only dir in it.
func TestCommitAndRemoveAll(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, TempPrefix("k")+".d")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "ro"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "ro", "f"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(tmp, "ro"), 0o500))
	final := filepath.Join(dir, "entry")
	require.NoError(t, Commit(tmp, final))
	b, err := os.ReadFile(filepath.Join(final, "ro", "f"))
	require.NoError(t, err)
	require.Equal(t, "x", string(b))
	require.NoError(t, RemoveAll(final))
	_, err = os.Lstat(final)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, RemoveAll(final), "nothing to remove is no error")
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
