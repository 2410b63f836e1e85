package workdir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func TestLockSerializesGoroutines(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t, WithLockRetry(time.Millisecond))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	var inside, maxInside, runs atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				w, err := m.Prepare(context.Background(), s)
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for {
					old := maxInside.Load()
					if n <= old || maxInside.CompareAndSwap(old, n) {
						break
					}
				}
				runs.Add(1)
				inside.Add(-1)
				if err := w.Close(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 40, runs.Load())
	require.EqualValues(t, 1, maxInside.Load(), "two goroutines held one instance at once")
}

// TestLockAcrossProcesses re-executes the test binary twice; both children
// hammer one instance. The shared log must show strictly alternating
// start/end pairs from one pid at a time, and no counter update is lost.
func TestLockAcrossProcesses(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	root := filepath.Join(t.TempDir(), "root")
	dir := t.TempDir()
	logPath, counter := filepath.Join(dir, "log"), filepath.Join(dir, "counter")
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src}
	const iter = 15
	var kids []*childproc.Proc
	for range 2 {
		kids = append(kids, startChild(t, "critical", root, s,
			"CHILD_LOG="+logPath, "CHILD_COUNTER="+counter, "CHILD_ITER="+strconv.Itoa(iter)))
	}
	for _, k := range kids {
		k.Expect(t, "ready")
	}
	for _, k := range kids { // open the gate for both at once
		_, err := k.Stdin.Write([]byte("go\n"))
		require.NoError(t, err)
	}
	for _, k := range kids {
		require.NoError(t, k.Wait())
	}

	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2*2*iter)
	pids := map[string]int{}
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		require.Equal(t, "start", start[0], "line %d: %q", i, lines[i])
		require.Equal(t, []string{"end", start[1]}, end, "critical sections interleave at line %d:\n%s", i+1, b)
		pids[start[1]]++
	}
	require.Len(t, pids, 2)
	c, err := os.ReadFile(counter)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(2*iter), string(c))
}

func TestLockDeadlineNamesHolder(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	root := filepath.Join(t.TempDir(), "root")
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-3", Source: src}
	holder := startChild(t, "hold", root, s)
	holder.Expect(t, "locked")

	m, err := New(root, WithLockRetry(5*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = m.Prepare(ctx, s)
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var le *LockedError
	require.True(t, errors.As(err, &le))
	require.NotNil(t, le.Holder)
	require.Equal(t, holder.PID(), le.Holder.PID)
	host, _ := os.Hostname()
	require.Equal(t, host, le.Holder.Host)
	require.False(t, le.Holder.Since.IsZero())
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d", holder.PID()))
	require.Contains(t, err.Error(), "elasticache/redis-cluster-3")

	// Remove waits on the same lock.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, m.Remove(ctx2, s.Stack, s.Instance, true), ErrLocked)

	// Once the holder lets go, a waiting Prepare gets the lock.
	require.NoError(t, holder.Stdin.Close())
	w, err := m.Prepare(context.Background(), s)
	require.NoError(t, err)
	require.NoError(t, holder.Wait())
	require.NoError(t, w.Close())
}

func TestLockCanceledContext(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := m.Prepare(ctx, s)
		done <- err
	}()
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	var le *LockedError
	if errors.As(err, &le) { // the cancel may land before the first try
		require.Equal(t, os.Getpid(), le.Holder.PID)
	}
	require.NoError(t, w.Close())
}

// signalHandler closes waiting when the manager logs that it waits for the
// instance lock: the test's barrier, so it never guesses with a sleep.
type signalHandler struct {
	slog.Handler
	once    sync.Once
	waiting chan struct{}
}

func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "waiting for instance lock" {
		h.once.Do(func() { close(h.waiting) })
	}
	return nil
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }

// LockWait counts the time a holder kept Prepare waiting, and nothing when
// the lock was free.
func TestLockWaitReported(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	h := &signalHandler{Handler: slog.DiscardHandler, waiting: make(chan struct{})}
	m := newManager(t, WithLockRetry(time.Millisecond), WithLogger(slog.New(h)))
	s := Spec{Stack: "s", Instance: "i", Source: src}

	first, err := m.Prepare(context.Background(), s)
	require.NoError(t, err)
	require.Zero(t, first.LockWait, "the lock was free")

	got := make(chan *Workdir, 1)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		w, err := m.Prepare(context.Background(), s)
		errc <- err
		got <- w
	}()
	<-h.waiting
	require.NoError(t, first.Close())
	require.NoError(t, <-errc)
	second := <-got
	elapsed := time.Since(start)
	defer second.Close()
	require.Positive(t, second.LockWait)
	require.LessOrEqual(t, second.LockWait, elapsed, "LockWait is part of the second Prepare")
}

// TestHolderNoteInPlace takes and releases an instance lock twice: while
// held, the lock file names this process as its holder; once released
// it names nobody; the note is rewritten in place (the file keeps its
// size, no other file appears in the locks dir). A lock path that is a
// link to another file is locked but never written through.
func TestHolderNoteInPlace(t *testing.T) {
	m := newManager(t)
	dir := filepath.Join(m.root, locksDir)
	path := filepath.Join(dir, "s__i.lock")
	for range 2 {
		lk, err := m.lock(context.Background(), "s", "i", "s__i")
		require.NoError(t, err)
		h := readHolder(path)
		require.NotNil(t, h)
		require.Equal(t, os.Getpid(), h.PID)
		require.NoError(t, lk.release())
		require.Nil(t, readHolder(path), "a released lock names no holder")
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.EqualValues(t, noteAt+noteSize, fi.Size())
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, ents, 1, "the note is in the lock file")
	}

	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("not a lock file"), 0o600))
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, "s__j.lock")))
	lk, err := m.lock(context.Background(), "s", "j", "s__j")
	require.NoError(t, err)
	require.NoError(t, lk.release())
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "not a lock file", string(b), "nothing is written through a link")
}
