package store

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"
)

// TestLockedTempDirNeverLooksDead: creators make and use locked dirs
// while a sweeper removes every dir of the prefix whose lock it can take
// (a dead process's, by the rule the runner's sweep follows). No creator
// ever finds its dir gone: a dir has its name only while its lock is held.
func TestLockedTempDirNeverLooksDead(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const prefix, lockName = "tfisolate-test-run-", ".lock"
	var stop atomic.Bool
	var sweeper, creators sync.WaitGroup
	sweeper.Go(func() {
		for !stop.Load() {
			dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
			for _, d := range dirs {
				lk := flock.New(filepath.Join(d, lockName))
				if ok, err := lk.TryLock(); err == nil && ok {
					_ = os.RemoveAll(d)
					_ = lk.Unlock()
				}
			}
		}
	})
	errs := make(chan error, 4)
	for range 4 {
		creators.Go(func() {
			for range 300 {
				dir, lk, err := LockedTempDir(prefix, lockName)
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, "cli.tfrc"), []byte("x"), 0o600)
					_ = os.RemoveAll(dir)
					_ = lk.Unlock()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	creators.Wait()
	stop.Store(true)
	sweeper.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a live dir was swept")
	}
}
