//go:build linux || darwin

package treesum

import (
	"io/fs"
	"syscall"
)

// sysStamp reads inode and ctime from the stat fi came from; ok is false
// when fi has none (a FileInfo not made by os).
func sysStamp(fi fs.FileInfo) (s Stamp, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, false
	}
	mtime, ctime := statTimes(st)
	return Stamp{Ino: uint64(st.Ino), Mtime: mtime.Nano(), Ctime: ctime.Nano()}, true
}
