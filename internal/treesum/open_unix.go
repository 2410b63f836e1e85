//go:build unix

package treesum

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a symlink in its
// last element (ELOOP instead) and without blocking (a FIFO opens at once
// and is then refused by its fstat; a regular file ignores the flag).
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
