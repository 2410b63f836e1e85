package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// DefaultRetry is how often Lock retries a lock another holder has:
// flock has no portable blocking wait that honours a context.
const DefaultRetry = 10 * time.Millisecond

// Locks is a directory of per-key lock files, shared by every process
// that uses the directory. A key is a file name: the caller makes it safe
// (a hash, a sanitized name).
type Locks struct {
	dir   string
	perm  fs.FileMode
	retry time.Duration
}

// NewLocks returns the Locks of dir, whose lock files get perm when they
// are created (0: flock's default, 0600) and whose waits retry every
// retry (0: DefaultRetry). The dir is created on the first Lock if it is
// missing.
func NewLocks(dir string, perm fs.FileMode, retry time.Duration) *Locks {
	if retry <= 0 {
		retry = DefaultRetry
	}
	return &Locks{dir: dir, perm: perm, retry: retry}
}

// Path is the lock file of key.
func (l *Locks) Path(key string) string { return filepath.Join(l.dir, key+".lock") }

func (l *Locks) flock(key string) *flock.Flock {
	if l.perm != 0 {
		return flock.New(l.Path(key), flock.SetPermissions(l.perm))
	}
	return flock.New(l.Path(key))
}

// Lock takes key's lock and returns its release. When another holder
// has it, waiting (if not nil) is called once, and Lock waits for as long
// as ctx allows: a ctx that ends first gives an error wrapping ctx.Err()
// and saying whose lock it waited for.
func (l *Locks) Lock(ctx context.Context, key string, waiting func()) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Recreated if someone removed it since the store was opened.
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Path(key), err)
	}
	lk := l.flock(key)
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Path(key), err)
	}
	if !ok {
		if waiting != nil {
			waiting()
		}
		start := time.Now()
		if ok, err = lk.TryLockContext(ctx, l.retry); !ok || err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("wait for %s, held by another process, gave up after %s: %w",
					l.Path(key), time.Since(start).Round(time.Millisecond), ctx.Err())
			}
			return nil, fmt.Errorf("lock %s: %w", l.Path(key), err)
		}
	}
	return func() { _ = lk.Unlock() }, nil
}

// TryLock takes key's lock only if its lock file exists and nobody holds
// it right now.
func (l *Locks) TryLock(key string) (unlock func(), ok bool) {
	if _, err := os.Stat(l.Path(key)); err != nil {
		return nil, false
	}
	lk := l.flock(key)
	if ok, err := lk.TryLock(); err != nil || !ok {
		return nil, false
	}
	return func() { _ = lk.Unlock() }, true
}

// TempPrefix is how every temp file and dir of key begins: the key, then
// this process's ID. Only the holder of key's lock creates such names, so
// SweepKey can tell them apart from other keys' and remove them.
func TempPrefix(key string) string { return key + "." + strconv.Itoa(os.Getpid()) }

// SweepKey removes every file or dir in tmpDir that is a temp name of key
// (see TempPrefix), reporting each to removed (if not nil) with the error
// of its removal. The caller holds key's lock, so every one is a dead
// process's leftover.
func SweepKey(tmpDir, key string, removed func(path string, err error)) {
	ents, _ := os.ReadDir(tmpDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), key+".") {
			p := filepath.Join(tmpDir, e.Name())
			err := RemoveAll(p)
			if removed != nil {
				removed(p, err)
			}
		}
	}
}

// SweepFree calls sweep for every key that has temp names in tmpDir and
// whose lock is free right now, holding the lock while it runs. keyOf
// tells a temp name's key; a name it does not know (false), or a key
// with no lock file, is not the store's and is left alone.
func (l *Locks) SweepFree(tmpDir string, keyOf func(name string) (string, bool), sweep func(key string)) {
	ents, err := os.ReadDir(tmpDir)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range ents {
		key, ok := keyOf(e.Name())
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		unlock, ok := l.TryLock(key)
		if !ok {
			continue
		}
		sweep(key)
		unlock()
	}
}

// Commit renames the finished temp tree (or file) tmp to final and syncs
// final's directory, so the entry is in place, whole, once it returns.
// The caller holds the key's lock, has made tmp durable (atomicfile.SyncFS
// or fsyncs) and has made sure nothing is at final.
func Commit(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(final))
}

// RemoveAll is os.RemoveAll that also removes trees holding directories
// made read-only (a module's or package's files can come with any mode).
func RemoveAll(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	// WalkDir calls us for a directory before reading it, so making it
	// writable and readable here lets the walk go on below it.
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	err := os.RemoveAll(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
