//go:build !linux && !darwin

package pluginc

import "io/fs"

// fileStamp identifies one version of a file as far as the platform lets
// us see without reading it: its modification time. Size and mode are
// compared besides.
type fileStamp struct {
	Mtime int64 `json:"mtime"`
}

func stampOf(fi fs.FileInfo) fileStamp { return fileStamp{Mtime: fi.ModTime().UnixNano()} }
