//go:build unix

package pluginc

import (
	"io/fs"
	"os"
	"syscall"
)

// owner returns the uid and gid that own the file.
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

func geteuid() int { return os.Geteuid() }

// setGroup gives a dir the cache created the shared group and mode 2775
// (group-writable, new entries inherit the group), whatever the umask.
func setGroup(dir string, gid int) error {
	if err := os.Lchown(dir, -1, gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o775|fs.ModeSetgid)
}
