package modstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/store"
)

// sweep removes what earlier attempts at this key left behind: temp
// trees of fills and damaged entries set aside in the tmp dir, and temp
// manifests in the entry. Only the holder of the key's lock creates them,
// so while the caller holds it every one belongs to a process that died.
func (s *Store) sweep(h string) {
	store.SweepKey(filepath.Join(s.dir, stateDir, tmpDir), h, func(p string, err error) {
		s.cfg.log.Info("removing leftover of an interrupted fill", "path", p)
		if err != nil {
			s.cfg.log.Warn("could not remove leftover of an interrupted fill", "path", p, "error", err)
		}
	})
	leftovers, _ := filepath.Glob(filepath.Join(s.entryPath(h), atomicfile.TempPrefix+manifestName+"-*"))
	for _, l := range leftovers {
		_ = os.Remove(l)
	}
}

// sweepAll sweeps every key with leftovers whose lock is free right now.
// The next Get of a key sweeps it anyway; this is for keys nobody asks
// for again.
func (s *Store) sweepAll() {
	s.locks.SweepFree(filepath.Join(s.dir, stateDir, tmpDir), func(name string) (string, bool) {
		h, _, ok := strings.Cut(name, ".")
		return h, ok && isHash(h) // anything else is not a temp name of ours
	}, s.sweep)
}

// discard moves a damaged entry out of the way in one rename (so no
// reader sees half of it), then removes it. The caller holds the key's
// lock.
func (s *Store) discard(h string) error {
	// Unique: one that could not be removed may still be there.
	aside := filepath.Join(s.dir, stateDir, tmpDir, store.TempPrefix(h)+"."+strconv.FormatInt(time.Now().UnixNano(), 36)+".damaged")
	if err := os.Rename(s.entryPath(h), aside); err != nil && !os.IsNotExist(err) {
		return err
	}
	s.hook("aside")
	if err := store.RemoveAll(aside); err != nil {
		// Out of the way already (an entry another user made may not be
		// removable by us): the next holder of the key's lock sweeps it.
		s.cfg.log.Warn("could not remove a damaged entry set aside", "path", aside, "error", err)
	}
	return nil
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
