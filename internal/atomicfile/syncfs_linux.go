//go:build linux

package atomicfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS flushes every dirty file of the filesystem holding dir with one
// syncfs(2) call: cheaper than an fsync per file when a writer has just
// produced many files and only needs them durable before a final marker.
func SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
