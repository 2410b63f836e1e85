package treesum

import "syscall"

// statTimes returns a stat's mtime and ctime: macOS names them Mtimespec,
// Ctimespec.
func statTimes(st *syscall.Stat_t) (mtime, ctime syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}
