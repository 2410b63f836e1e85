//go:build !unix

package pathtrust

import (
	"errors"
	"io/fs"
)

// Owner reports no owner: on this platform nothing is checked (Windows
// ACLs are not modes).
func Owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// Geteuid is -1: there are no owners on this platform.
func Geteuid() int { return -1 }

// SetGroup fails: group sharing needs Unix modes.
func SetGroup(string, int) error {
	return errors.New("sharing a directory with a group is only supported on Unix")
}
