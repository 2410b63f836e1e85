package modstore

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// sweep removes what earlier attempts at this key left behind: temp
// trees of fills and damaged entries set aside in the tmp dir, and temp
// manifests in the entry. Only the holder of the key's lock creates them,
// so while the caller holds it every one belongs to a process that died.
func (s *Store) sweep(h string) {
	tmp := filepath.Join(s.dir, stateDir, tmpDir)
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), h+".") {
			p := filepath.Join(tmp, e.Name())
			s.cfg.log.Info("removing leftover of an interrupted fill", "path", p)
			if err := removeAll(p); err != nil {
				s.cfg.log.Warn("could not remove leftover of an interrupted fill", "path", p, "error", err)
			}
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.entryPath(h), atomicfile.TempPrefix+manifestName+"-*"))
	for _, l := range leftovers {
		_ = os.Remove(l)
	}
}

// sweepAll sweeps every key with leftovers whose lock is free right now.
// The next Get of a key sweeps it anyway; this is for keys nobody asks
// for again.
func (s *Store) sweepAll() {
	ents, err := os.ReadDir(filepath.Join(s.dir, stateDir, tmpDir))
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range ents {
		h, _, ok := strings.Cut(e.Name(), ".")
		if !ok || seen[h] || !isHash(h) {
			continue // not a temp name of ours: leave it alone
		}
		seen[h] = true
		lk := flock.New(filepath.Join(s.dir, stateDir, locksDir, h+".lock"))
		if ok, err := lk.TryLock(); err != nil || !ok {
			continue
		}
		s.sweep(h)
		_ = lk.Unlock()
	}
}

// discard moves a damaged entry out of the way in one rename (so no
// reader sees half of it), then removes it. The caller holds the key's
// lock.
func (s *Store) discard(h string) error {
	// Unique: one that could not be removed may still be there.
	aside := filepath.Join(s.dir, stateDir, tmpDir, h+"."+strconv.Itoa(os.Getpid())+"."+strconv.FormatInt(time.Now().UnixNano(), 36)+".damaged")
	if err := os.Rename(s.entryPath(h), aside); err != nil && !os.IsNotExist(err) {
		return err
	}
	s.hook("aside")
	if err := removeAll(aside); err != nil {
		// Out of the way already (an entry another user made may not be
		// removable by us): the next holder of the key's lock sweeps it.
		s.cfg.log.Warn("could not remove a damaged entry set aside", "path", aside, "error", err)
	}
	return nil
}

// removeAll is os.RemoveAll that also removes trees with directories a
// fill made read-only (a module's files can come with any mode).
func removeAll(p string) error {
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
	return os.RemoveAll(p)
}

// isHash reports whether h could be a key's hash: 64 lowercase hex digits.
func isHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
