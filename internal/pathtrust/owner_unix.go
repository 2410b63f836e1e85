//go:build unix

package pathtrust

import (
	"io/fs"
	"os"
	"syscall"
)

// Owner returns the uid and gid that own the file; ok is false where
// files have no Unix owners.
func Owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// Geteuid is the effective user id (-1 where there are no owners).
func Geteuid() int { return os.Geteuid() }

// SetGroup gives a dir group gid and mode 2775 (group-writable, new
// entries inherit the group), whatever the umask.
func SetGroup(dir string, gid int) error {
	if err := os.Lchown(dir, -1, gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o775|fs.ModeSetgid)
}
