package modstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/flight"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
	"github.com/tfisolate/tfisolate/internal/store"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// Layout of a store directory DIR:
//
//	DIR/<hash>/manifest.json   an entry's record: key, every path, mode, size, SHA-256
//	DIR/<hash>/tree/           what fill wrote; the dir Get returns
//	DIR/.modstore/locks/<hash>.lock   per-key flock, never deleted
//	DIR/.modstore/tmp/<hash>.*        fills under way, or leftovers of dead ones
//
// <hash> is the hex SHA-256 of the key.
const (
	stateDir     = ".modstore"
	locksDir     = "locks"
	tmpDir       = "tmp"
	treeDir      = "tree"
	manifestName = "manifest.json"
)

// Store is a content-addressed store of directory trees, shared by any
// number of goroutines and processes on one machine. It holds no open
// files or goroutines between calls, so it needs no Close. The zero Store
// is not usable: call Open.
type Store struct {
	dir     string
	cfg     config
	flights flight.Group[result]
	locks   *store.Locks

	fills, hits, waits, repairs, replaces, recopies atomic.Int64

	// Test hooks, set only by this package's tests before first use.
	testHookPoint  func(point string) // at the crash points of a fill
	testHookSlow   func()             // a Get found no usable entry and goes to the lock
	testHookWait   func()             // a Get found the key locked by another process
	testHookCopied func()             // Copy copied one regular file
}

// Stats counts what a Store did since Open. Counts are of this Store
// only; other processes keep their own.
type Stats struct {
	// Fills counts fill calls that succeeded and stored an entry (Repairs
	// included).
	Fills int64
	// Hits counts Get calls that returned an entry without running fill:
	// found on disk, filled meanwhile by another process, or shared with
	// another Get of this Store that filled it.
	Hits int64
	// Waits counts the times a Get found its key's lock held by another
	// process (or another Store) and waited for it.
	Waits int64
	// Repairs counts damaged entries that were removed and refilled.
	Repairs int64
	// Replaces counts entries that Replace put in place of an entry
	// that was there (Fills counts them too).
	Replaces int64
	// Recopies counts Copy attempts that found the entry changed under
	// them (replaced by another process) and copied again.
	Recopies int64
}

// result is what one flight of Get shares with the other callers of the
// same key in this process.
type result struct {
	dir    string
	filled bool
}

// Open returns a Store on dir, creating dir (0700, as every missing dir
// above it) and its state directory if they are missing. Leftovers of fills whose process died are removed for
// every key whose lock is free, so a store does not grow from crashes of
// keys nobody asks for again.
func Open(dir string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("modstore: open: nil Option")
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("modstore: open: %w: the path is empty", ErrInvalidDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("modstore: open %s: %w: it is not a directory", abs, ErrInvalidDir)
	}
	// Checked before anything is created in it, and again after: whoever
	// made it first, it is checked as it is now.
	if err := unsafe(pathtrust.Effective().CheckRoot(abs)); err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", abs, err)
	}
	// A missing store, and the dirs above it that this creates, are
	// private (0700).
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", abs, err)
	}
	for _, d := range []string{locksDir, tmpDir} {
		if err := os.MkdirAll(filepath.Join(abs, stateDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("modstore: open %s: %w", abs, err)
		}
	}
	s := &Store{dir: abs, cfg: cfg, locks: store.NewLocks(filepath.Join(abs, stateDir, locksDir), 0, cfg.lockRetry)}
	if err := unsafe(pathtrust.Effective().CheckRoot(abs)); err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", abs, err)
	}
	if err := s.checkStore(); err != nil {
		return nil, fmt.Errorf("modstore: open %s: %w", abs, err)
	}
	// Every Get looks at the disk again: an entry found once may be
	// damaged later, and a failed fill must not be a lasting answer.
	s.flights.Forget = true
	s.sweepAll()
	return s, nil
}

// Dir returns the store's directory, absolute.
func (s *Store) Dir() string { return s.dir }

// Stats returns what this Store did since Open.
func (s *Store) Stats() Stats {
	return Stats{Fills: s.fills.Load(), Hits: s.hits.Load(), Waits: s.waits.Load(), Repairs: s.repairs.Load(),
		Replaces: s.replaces.Load(), Recopies: s.recopies.Load()}
}

// Get returns the directory holding the tree stored for key, filling it
// with fill if there is no usable entry, and whether this call ran fill.
//
// fill gets ctx and an empty directory on the store's filesystem and
// writes the tree into it: directories, regular files and symlinks. It
// runs at most once at a time per key across every goroutine and process
// using the store's directory; the others wait (honouring their own ctx)
// and get its entry. If fill fails, its error is returned wrapped in
// ErrFill (and shared with the Get calls of this Store waiting for it),
// nothing is stored, and the next Get fills again.
//
// The returned directory is read-only to callers: copy what you need out
// of it (a new inode for every file, never a hard link) and never write,
// chmod or remove anything in it. The entry is checked against its
// manifest before it is returned; one found changed is treated as
// damaged, refilled under the key's lock, and never returned. A Replace
// of the key (by any process) swaps the directory's content for another
// tree at any time: a caller that copies out of it while another process
// may replace the key uses Copy, which never gives half of each.
func (s *Store) Get(ctx context.Context, key string, fill func(ctx context.Context, dir string) error) (dir string, filled bool, err error) {
	if key == "" {
		return "", false, fmt.Errorf("modstore: get: %w: the key is empty", ErrInvalidKey)
	}
	if fill == nil {
		return "", false, fmt.Errorf("modstore: get %s: %w", keyName(key), ErrNilFill)
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if err := s.checkStore(); err != nil {
		return "", false, fmt.Errorf("modstore: get %s: %w", keyName(key), err)
	}
	h := hashKey(key)
	if c := s.check(h, key, s.cfg.full); c.state == entryOK {
		s.hits.Add(1)
		return s.treePath(h), false, nil
	}
	if s.testHookSlow != nil {
		s.testHookSlow()
	}
	// One locked attempt per key in this process: the leader does it in
	// its own goroutine (so nothing outlives this call); the others wait
	// with their own ctx and share its result.
	res, leader, err := s.flights.Do(ctx, key, "another Get in this process", func() (result, error) {
		return s.getLocked(ctx, key, h, fill)
	})
	if err != nil {
		return "", false, err
	}
	filled = leader && res.filled
	if !filled {
		s.hits.Add(1)
	}
	return res.dir, filled, nil
}

// getLocked takes the key's lock, then returns the entry if another
// process stored it (or it was fine after all), or fills it.
func (s *Store) getLocked(ctx context.Context, key, h string, fill func(context.Context, string) error) (result, error) {
	unlock, err := s.lock(ctx, key, h)
	if err != nil {
		return result{}, err
	}
	// The lock file itself is never removed: removing it would let two
	// processes hold "the" lock on different inodes.
	defer unlock()
	return s.getHeld(ctx, key, h, fill)
}

// getHeld is getLocked for a caller that holds the key's lock.
func (s *Store) getHeld(ctx context.Context, key, h string, fill func(context.Context, string) error) (result, error) {
	// Only the lock holder creates temp files of this key, so every one
	// there now belongs to a process that died (or failed to remove it).
	s.sweep(h)
	c := s.check(h, key, s.cfg.full)
	if c.state == entryStale {
		// Only the stamps moved (a backup restore, a touch, a hard link):
		// the content decides.
		c = s.check(h, key, true)
	}
	if c.err != nil {
		return result{}, fmt.Errorf("modstore: %s: %w", keyName(key), c.err)
	}
	if c.state == entryOK {
		if c.stale {
			s.restamp(h, c)
		}
		return result{dir: s.treePath(h)}, nil
	}
	entry := s.entryPath(h)
	damaged := c.state == entryDamaged
	if damaged {
		s.cfg.log.Warn("entry does not match its manifest; refilling it", "key", key, "entry", entry, "problem", c.why)
		if err := s.discard(h); err != nil {
			return result{}, fmt.Errorf("modstore: %w %s (%s) of %s: remove it: %w", ErrDamagedEntry, entry, c.why, keyName(key), err)
		}
	}
	if err := s.fill(ctx, key, h, fill); err != nil {
		if damaged && ctx.Err() == nil {
			err = fmt.Errorf("%w %s (%s) was removed, and refilling it failed: %w", ErrDamagedEntry, entry, c.why, err)
		}
		return result{}, err
	}
	s.fills.Add(1)
	if damaged {
		s.repairs.Add(1)
	}
	return result{dir: s.treePath(h), filled: true}, nil
}

// lock takes the key's flock, waiting for another process's fill for as
// long as ctx allows, and returns its release.
func (s *Store) lock(ctx context.Context, key, h string) (func(), error) {
	unlock, err := s.locks.Lock(ctx, h, func() {
		s.waits.Add(1)
		s.cfg.log.Debug("waiting for another process filling the entry", "key", key, "lock", s.locks.Path(h))
		if s.testHookWait != nil {
			s.testHookWait()
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("modstore: another process filling %s: %w", keyName(key), err)
		}
		return nil, fmt.Errorf("modstore: lock %s: %w", keyName(key), err)
	}
	return unlock, nil
}

// fill runs the caller's fill in a fresh temp dir, records and syncs what
// it wrote, and renames it into place. The caller holds the key's lock
// and has made sure no entry is in the way.
func (s *Store) fill(ctx context.Context, key, h string, fill func(context.Context, string) error) error {
	tmpRoot := filepath.Join(s.dir, stateDir, tmpDir)
	if err := os.MkdirAll(tmpRoot, 0o755); err != nil {
		return fmt.Errorf("modstore: fill %s: %w", keyName(key), err)
	}
	// Named after the key, so the next holder of its lock can sweep it.
	tmp, err := os.MkdirTemp(tmpRoot, store.TempPrefix(h)+".*")
	if err != nil {
		return fmt.Errorf("modstore: fill %s: %w", keyName(key), err)
	}
	defer store.RemoveAll(tmp) // a no-op once renamed into place
	// MkdirTemp made it 0700; the entry is for every user of the store.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("modstore: fill %s: %w", keyName(key), err)
	}
	tree := filepath.Join(tmp, treeDir)
	if err := os.Mkdir(tree, 0o755); err != nil {
		return fmt.Errorf("modstore: fill %s: %w", keyName(key), err)
	}
	s.cfg.log.Info("filling entry", "key", key, "dir", tree)
	if err := fill(ctx, tree); err != nil {
		return fmt.Errorf("modstore: %w for %s: %w", ErrFill, keyName(key), err)
	}
	if err := private(tree); err != nil {
		return fmt.Errorf("modstore: record the tree filled for %s: %w", keyName(key), err)
	}
	files, err := recordTree(tree)
	if err != nil {
		return fmt.Errorf("modstore: record the tree filled for %s: %w", keyName(key), err)
	}
	s.hook("filled")
	b, err := (&manifest{Version: manifestVersion, Key: key, Files: files}).encode()
	if err != nil {
		return fmt.Errorf("modstore: record the tree filled for %s: %w", keyName(key), err)
	}
	if err := os.WriteFile(filepath.Join(tmp, manifestName), b, 0o644); err != nil {
		return fmt.Errorf("modstore: record the tree filled for %s: %w", keyName(key), err)
	}
	// Everything fill and we wrote is durable before the rename makes it
	// an entry: one syncfs instead of an fsync per file.
	if err := atomicfile.SyncFS(tmp); err != nil {
		return fmt.Errorf("modstore: fill %s: %w", keyName(key), err)
	}
	s.hook("synced")
	entry := s.entryPath(h)
	// An entry in the way (Replace) is set aside in one rename, under a
	// name the next holder of the key's lock sweeps: a crash between the
	// two renames leaves no entry, never half of one, and the next Get
	// fills afresh.
	old := ""
	if _, err := os.Lstat(entry); err == nil {
		old = filepath.Join(tmpRoot, store.TempPrefix(h)+".replaced")
		if err := os.Rename(entry, old); err != nil {
			return fmt.Errorf("modstore: move the replaced entry of %s out of the way: %w", keyName(key), err)
		}
		s.hook("replaced")
	}
	if err := store.Commit(tmp, entry); err != nil {
		return fmt.Errorf("modstore: move the entry of %s into place: %w", keyName(key), err)
	}
	s.hook("renamed")
	if old != "" {
		if err := store.RemoveAll(old); err != nil {
			// Swept by the next holder of the key's lock.
			s.cfg.log.Warn("could not remove a replaced entry", "key", key, "path", old, "error", err)
		}
	}
	s.cfg.log.Info("stored entry", "key", key, "entry", entry, "paths", len(files))
	return nil
}

// restamp records an entry's current stamps after a full check found its
// content unchanged, so the cheap check passes again. The caller holds
// the key's lock. A failure only costs the next Get another full check.
func (s *Store) restamp(h string, c checked) {
	m := *c.m
	m.Files = c.now
	b, err := m.encode()
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(s.entryPath(h), manifestName), b, 0o644)
	}
	if err != nil {
		s.cfg.log.Warn("could not record the new stamps of an unchanged entry", "entry", s.entryPath(h), "error", err)
		return
	}
	s.cfg.log.Info("entry re-verified against its manifest", "entry", s.entryPath(h))
}

func (s *Store) hook(point string) {
	if s.testHookPoint != nil {
		s.testHookPoint(point)
	}
}

func (s *Store) entryPath(h string) string { return filepath.Join(s.dir, h) }

func (s *Store) treePath(h string) string { return filepath.Join(s.dir, h, treeDir) }

// hashKey names a key's entry: any string, safe on every filesystem, and
// never ".modstore".
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// keyName quotes a key for an error message, shortened: keys can be long
// and span lines.
func keyName(key string) string {
	const max = 80
	if len(key) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(key[cut]) {
			cut--
		}
		key = key[:cut] + "..."
	}
	return "key " + strconv.Quote(key)
}

type entryState int

const (
	entryOK      entryState = iota // in place and as its manifest says
	entryAbsent                    // no entry dir
	entryStale                     // as recorded but for file stamps: the content decides
	entryDamaged                   // not what was stored for this key
)

// checked is what check found.
type checked struct {
	state entryState
	why   string    // for entryDamaged: what is wrong
	stale bool      // entryOK from a full check whose stamps differ
	m     *manifest // the manifest, when readable
	now   []record  // what is there now, when scanned
	err   error     // a newer release's entry: refused, never refilled
}

// check compares the entry of key with its manifest: cheaply (paths,
// types, modes, sizes, symlink targets, stamps; no file read) or, with
// full, reading and hashing every file. It takes no lock: an entry is
// renamed into place complete, so any entry it sees is a whole one.
func (s *Store) check(h, key string, full bool) checked {
	entry := s.entryPath(h)
	fi, err := os.Lstat(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return checked{state: entryAbsent}
	}
	if err != nil {
		return checked{state: entryDamaged, why: err.Error()}
	}
	if !fi.IsDir() {
		return checked{state: entryDamaged, why: "it is not a directory"}
	}
	// An entry someone else could have written (manifest and tree alike)
	// proves nothing: it is refilled into a private one.
	if why := foreignEntry(entry); why != "" {
		return checked{state: entryDamaged, why: why}
	}
	m, err := readManifest(filepath.Join(entry, manifestName))
	if errors.Is(err, format.ErrNewer) {
		return checked{state: entryDamaged, why: err.Error(), err: err}
	}
	if err != nil {
		return checked{state: entryDamaged, why: "its manifest is missing or unreadable: " + err.Error()}
	}
	if m.Key != key {
		// A hash collision or a copied entry: never hand out another
		// key's tree.
		return checked{state: entryDamaged, m: m, why: "it was stored for another " + keyName(m.Key)}
	}
	tree := filepath.Join(entry, treeDir)
	if fi, err := os.Lstat(tree); err != nil || !fi.IsDir() {
		return checked{state: entryDamaged, m: m, why: "its tree directory is missing"}
	}
	now, changes, err := verify(tree, m.Files, full)
	if err != nil {
		return checked{state: entryDamaged, m: m, why: err.Error()}
	}
	if changes.Damaged() {
		return checked{state: entryDamaged, m: m, why: changes.Describe(storeWords)}
	}
	c := checked{state: entryOK, m: m, now: now, stale: changes.Stale()}
	if c.stale && !full {
		c.state = entryStale
	}
	return c
}

// Record returns the record of the tree stored for key, as its manifest
// holds it (every path's type, mode, size, SHA-256 and symlink target),
// for a caller that hands the tree on and checks each file against it as
// it reads it (a module server packing an entry). It reads no file of the
// tree: call it after Get, and check what you read.
func (s *Store) Record(key string) (treesum.Tree, error) {
	if key == "" {
		return nil, fmt.Errorf("modstore: record: %w: the key is empty", ErrInvalidKey)
	}
	entry := s.entryPath(hashKey(key))
	if why := foreignEntry(entry); why != "" {
		return nil, fmt.Errorf("modstore: record of %s: %w %s: %s", keyName(key), ErrDamagedEntry, entry, why)
	}
	m, err := readManifest(filepath.Join(entry, manifestName))
	if err != nil {
		return nil, fmt.Errorf("modstore: record of %s: %w", keyName(key), err)
	}
	if m.Key != key {
		return nil, fmt.Errorf("modstore: record of %s: %w %s: it was stored for another %s", keyName(key), ErrDamagedEntry, entry, keyName(m.Key))
	}
	return m.Files, nil
}
