package workdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	note   *os.File      // the holder note's handle, while the lock is held
	size   int           // the length of the note written
	waited time.Duration // how long another holder kept us waiting

	// waitedFor is the last holder note read while waiting; nil when the
	// lock was free or no holder ever recorded itself.
	waitedFor *Holder
}

func (m *Manager) lock(ctx context.Context, stack, instance, id string) (*instanceLock, error) {
	dir := filepath.Join(m.root, locksDir)
	if err := atomicfile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("create lock dir: %w", err)
	}
	lk := &instanceLock{path: filepath.Join(dir, id+".lock")}
	lk.fl = flock.New(lk.path)
	ok, err := lk.fl.TryLock()
	if err == nil && !ok {
		lk.waitedFor = readHolder(lk.path)
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
			h := readHolder(lk.path)
			if h == nil {
				h = lk.waitedFor
			}
			return nil, &LockedError{Stack: stack, Instance: instance, LockFile: lk.path, Holder: h, Err: cerr}
		}
		return nil, fmt.Errorf("lock %s: %w", lk.path, err)
	}
	if err := lk.writeNote(); err != nil {
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
		if h := readHolder(lk.path); h != nil {
			if old := lk.waitedFor; old == nil || h.PID != old.PID || h.Host != old.Host || !h.Since.Equal(old.Since) {
				report(h)
			}
			lk.waitedFor = h
		}
		t.Reset(m.lockRetry)
	}
}

func (lk *instanceLock) release() error {
	// Blank the holder note while still holding the lock, so it never
	// describes a later holder.
	var nerr error
	if lk.note != nil {
		if _, err := lk.note.WriteAt([]byte(strings.Repeat(" ", lk.size)), noteAt); err != nil {
			nerr = fmt.Errorf("blank lock holder note: %w", err)
		}
		nerr = errors.Join(nerr, lk.note.Close())
	}
	uerr := lk.fl.Unlock()
	cerr := lk.fl.Close()
	if err := errors.Join(uerr, cerr); err != nil {
		return fmt.Errorf("unlock %s: %w", lk.path, err)
	}
	return nerr
}

// The holder note is written into the lock file itself, from byte
// noteAt on, padded with spaces to noteSize (or the next multiple of it
// for a very long host name), so that replacing a note, and blanking it,
// rewrites the same bytes in place: no file is created, renamed or
// removed per lock (a separate note file cost about 0.4 ms of CPU a lock
// on the development machine's ext4). Byte 0 is never written or read:
// it is the range a Windows lock covers, and Windows locks are
// mandatory. A reader may meet a note being rewritten; it then sees no
// holder (as it does before the first note) and reads again on its next
// poll. The note is diagnostics only: the flock alone is the lock.
const (
	noteAt   = 1
	noteSize = 512
)

// writeNote records this process as the lock's holder.
func (lk *instanceLock) writeNote() error {
	host, _ := os.Hostname()
	data, err := json.Marshal(Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC()})
	if err != nil {
		return err
	}
	// Written only if the lock path is the regular file itself: never
	// through a link someone put in its place.
	li, err := os.Lstat(lk.path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(lk.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !li.Mode().IsRegular() || !os.SameFile(li, fi) {
		return errors.Join(fmt.Errorf("%s is not a regular file of its own", lk.path), err, f.Close())
	}
	// A lock file an older release made 0644 is private from now on, as
	// flock makes new ones (0600): the note is a record of who runs.
	if li.Mode().Perm()&^atomicfile.Record != 0 {
		if err := f.Chmod(li.Mode().Perm() & atomicfile.Record); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	size := (len(data)/noteSize + 1) * noteSize
	if _, err := f.WriteAt(append(data, strings.Repeat(" ", size-len(data))...), noteAt); err != nil {
		return errors.Join(err, f.Close())
	}
	lk.note, lk.size = f, size
	return nil
}

// readHolder reads the holder note of the lock file at path; nil when
// there is none (no holder, or one that has not written it yet).
func readHolder(path string) *Holder {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var h Holder
	// The first JSON value only: a note written over a longer one left
	// by a holder that died leaves the longer one's tail after it.
	if json.NewDecoder(io.NewSectionReader(f, noteAt, 1<<20)).Decode(&h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}
