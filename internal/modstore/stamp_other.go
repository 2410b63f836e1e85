//go:build !linux && !darwin

package modstore

import "io/fs"

// fileStamp identifies one version of a file as far as the platform lets
// us see without reading it: its modification time. Type, mode and size
// are compared besides.
type fileStamp struct {
	Mtime int64 `json:"mtime"`
}

func stampOf(fi fs.FileInfo) fileStamp { return fileStamp{Mtime: fi.ModTime().UnixNano()} }
