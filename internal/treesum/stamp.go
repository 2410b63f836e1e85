package treesum

import "io/fs"

// A Stamp identifies one version of a regular file without reading it: a
// write, a replacement (a new inode) or a chmod changes it. ctime cannot
// be set by a user, so even a file whose mtime was put back is seen as
// changed. Where the platform does not show inode and ctime (anything but
// Linux and macOS), only Mtime is set, and size, mode and type are
// compared besides. Times are in nanoseconds since the Unix epoch.
type Stamp struct {
	Ino   uint64 `json:"ino"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
}

// stampOf is the stamp of the file fi describes.
func stampOf(fi fs.FileInfo) Stamp {
	if s, ok := sysStamp(fi); ok {
		return s
	}
	return Stamp{Mtime: fi.ModTime().UnixNano()}
}
