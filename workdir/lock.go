package workdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// instanceLock is a held exclusive flock on one instance. The lock file
// lives under root/.locks, outside the instance home, so that Remove can
// delete the home while other processes wait on the lock: deleting a lock
// file that someone has open would let a second process lock a fresh inode
// and run concurrently.
type instanceLock struct {
	fl     *flock.Flock
	path   string
	holder string
	waited time.Duration // how long another holder kept us waiting

	// waitedFor is the last holder note read while waiting; nil when the
	// lock was free or no holder ever recorded itself.
	waitedFor *Holder
}

func (m *Manager) lock(ctx context.Context, stack, instance, id string) (*instanceLock, error) {
	dir := filepath.Join(m.root, locksDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create lock dir: %w", err)
	}
	lk := &instanceLock{
		path:   filepath.Join(dir, id+".lock"),
		holder: filepath.Join(dir, id+".holder.json"),
	}
	lk.fl = flock.New(lk.path)
	ok, err := lk.fl.TryLock()
	if err == nil && !ok {
		lk.waitedFor = readHolder(lk.holder)
		m.log.InfoContext(ctx, "waiting for instance lock", "stack", stack, "instance", instance, "holder", lk.waitedFor)
		t0 := time.Now()
		report := func(h *Holder) {
			reportWait(ctx, LockWait{Stack: stack, Instance: instance, Holder: h, Waited: time.Since(t0)})
		}
		report(lk.waitedFor)
		ok, err = m.waitLock(ctx, lk, report)
		lk.waited = time.Since(t0)
		reportWait(ctx, LockWait{Stack: stack, Instance: instance, Holder: lk.waitedFor, Waited: lk.waited, Done: true})
	}
	if !ok {
		_ = lk.fl.Close()
		if cerr := ctx.Err(); cerr != nil {
			h := readHolder(lk.holder)
			if h == nil {
				h = lk.waitedFor
			}
			return nil, &LockedError{Stack: stack, Instance: instance, LockFile: lk.path, Holder: h, Err: cerr}
		}
		return nil, fmt.Errorf("lock %s: %w", lk.path, err)
	}
	host, _ := os.Hostname()
	data, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC()})
	// Diagnostics only: atomic for readers, but not worth an fsync per lock.
	if err := atomicfile.WriteFile(lk.holder, data, 0o644, atomicfile.NoSync()); err != nil {
		// Only diagnostics are lost; the lock itself is held.
		m.log.WarnContext(ctx, "cannot record lock holder", "err", err)
	}
	m.log.DebugContext(ctx, "instance locked", "stack", stack, "instance", instance)
	return lk, nil
}

// waitLock polls the flock until it is taken or ctx ends, reading the
// holder note on every miss: a holder writes its note just after taking
// the lock, so the first miss may come before the note exists, and a
// later holder replaces an earlier one. The last note seen is kept, and
// a new one is reported.
func (m *Manager) waitLock(ctx context.Context, lk *instanceLock, report func(*Holder)) (bool, error) {
	t := time.NewTimer(m.lockRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
		ok, err := lk.fl.TryLock()
		if err != nil || ok {
			return ok, err
		}
		if h := readHolder(lk.holder); h != nil {
			if old := lk.waitedFor; old == nil || h.PID != old.PID || h.Host != old.Host || !h.Since.Equal(old.Since) {
				report(h)
			}
			lk.waitedFor = h
		}
		t.Reset(m.lockRetry)
	}
}

func (lk *instanceLock) release() error {
	// Remove the holder note while still holding the lock, so it never
	// describes a later holder.
	rerr := os.Remove(lk.holder)
	if errors.Is(rerr, os.ErrNotExist) {
		rerr = nil
	}
	uerr := lk.fl.Unlock()
	cerr := lk.fl.Close()
	if err := errors.Join(uerr, cerr); err != nil {
		return fmt.Errorf("unlock %s: %w", lk.path, err)
	}
	if rerr != nil {
		return fmt.Errorf("remove lock holder note: %w", rerr)
	}
	return nil
}

func readHolder(path string) *Holder {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}
