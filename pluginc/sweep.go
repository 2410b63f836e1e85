package pluginc

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// sweepAll removes temp files left by dead processes for every package
// whose lock is free right now. Leftovers are normally swept by the next
// installer of the same package, but a process killed after its rename
// (before removing its zip) leaves a zip no installer will come back for.
// Holding the package lock proves no live process owns the files.
func (c *Cache) sweepAll() {
	tmp := filepath.Join(c.dir, stateDir, "tmp")
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	byKey := map[string][]string{}
	for _, e := range ents {
		name := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".zip"), ".d")
		i := strings.LastIndexByte(name, '.')
		if i <= 0 {
			continue
		}
		byKey[name[:i]] = append(byKey[name[:i]], e.Name())
	}
	for key, names := range byKey {
		lockPath := filepath.Join(c.dir, stateDir, "locks", key+".lock")
		if _, err := os.Stat(lockPath); err != nil {
			continue // not ours: only packages with a lock file have temp files
		}
		lk := flock.New(lockPath)
		if ok, err := lk.TryLock(); err != nil || !ok {
			continue
		}
		for _, n := range names {
			c.log.Info("removing leftover of an interrupted install", "path", filepath.Join(tmp, n))
			_ = os.RemoveAll(filepath.Join(tmp, n))
		}
		_ = lk.Unlock()
	}
}
