package treesum

import "syscall"

// statTimes returns a stat's mtime and ctime: Linux names them Mtim, Ctim.
func statTimes(st *syscall.Stat_t) (mtime, ctime syscall.Timespec) { return st.Mtim, st.Ctim }
