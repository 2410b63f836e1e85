package modstore

import (
	"io/fs"
	"syscall"
)

// fileStamp identifies one version of a file: a write, a replacement (new
// inode) or a chmod changes it. ctime cannot be set by a user, so even a
// file whose mtime was put back is seen as changed.
type fileStamp struct {
	Ino   uint64 `json:"ino"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
}

func stampOf(fi fs.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{Mtime: fi.ModTime().UnixNano()}
	}
	return fileStamp{Ino: st.Ino, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}
