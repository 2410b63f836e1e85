package pluginc

import (
	"path/filepath"
	"strings"
)

// sweepAll removes temp files left by dead processes for every package
// whose lock is free right now. Leftovers are normally swept by the next
// installer of the same package, but a process killed after its rename
// (before removing its zip) leaves a zip no installer will come back for.
// Holding the package lock proves no live process owns the files.
func (c *Cache) sweepAll() {
	c.locks.SweepFree(filepath.Join(c.dir, stateDir, "tmp"), func(name string) (string, bool) {
		// KEY.PID.zip, KEY.PID.d, KEY.PID-damaged.d, KEY.PID-copy.d: the key is what comes
		// before the last dot once the suffix is off (a version's dots
		// are inside the key).
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".d")
		i := strings.LastIndexByte(name, '.')
		return name[:max(i, 0)], i > 0
	}, c.sweepKey)
}
