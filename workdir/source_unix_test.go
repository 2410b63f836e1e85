//go:build unix

package workdir

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// A FIFO named like a configuration file never hangs Prepare: it is
// skipped with a log line naming it, Prepare returns within its deadline,
// and the instance lock is free afterwards.
func TestFIFOInSourceDoesNotHang(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": "# x", "modules/m/main.tf": "# m"})
	for _, f := range []string{"hang.tf", "modules/m/hang.tf", "data.json"} {
		p := filepath.Join(src, filepath.FromSlash(f))
		require.NoError(t, syscall.Mkfifo(p, 0o644))
		t.Cleanup(func() { unblockFIFO(p) })
	}
	testenv.WriteTree(t, src, map[string]string{"main.tf": `module "m" { source = "./modules/m" }`})
	rec := &recorder{}
	m := newManager(t, WithLogger(slog.New(rec)))
	s := Spec{Stack: "s", Instance: "i", Source: src}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		w   *Workdir
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := m.Prepare(ctx, s)
		done <- result{w, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute): // a watchdog for a hang, not a timing assertion
		t.Fatal("Prepare hung on a FIFO past its deadline")
	}
	require.NoError(t, r.err)
	require.Equal(t, map[string]string{"main.tf": `module "m" { source = "./modules/m" }`, "modules/m/main.tf": "# m"}, regularFiles(t, r.w.Dir))
	logs := rec.find("source holds files that are not regular files")
	require.Len(t, logs, 1)
	require.Contains(t, logs[0]["files"], filepath.Join(src, "hang.tf"))
	require.Contains(t, logs[0]["files"], filepath.Join(src, "data.json"))
	require.NoError(t, r.w.Close())

	fl := flock.New(r.w.LockFile)
	ok, err := fl.TryLock()
	require.NoError(t, err)
	require.True(t, ok, "the instance lock was released")
	require.NoError(t, fl.Unlock())
}

// A cancelled context stops hashing and copying; the lock is released.
func TestPrepareHonoursContextWhileReading(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, sourceFiles("v1", 5))
	ctx, cancel := context.WithCancel(context.Background())
	m := newManager(t, withHook(func(string) { cancel() }))
	s := Spec{Stack: "s", Instance: "i", Source: src}
	_, err := m.Prepare(ctx, s)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	w := prepare(t, m, s)
	require.Equal(t, sourceFiles("v1", 5), regularFiles(t, w.Dir))
}

// unblockFIFO lets a reader stuck in open(2) go, so a failing test does
// not leave a goroutine blocked for the rest of the run.
func unblockFIFO(p string) {
	if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
