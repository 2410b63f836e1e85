//go:build !linux && !darwin

package treesum

import "io/fs"

// sysStamp: no inode or ctime shown here; stampOf falls back to mtime.
func sysStamp(fs.FileInfo) (Stamp, bool) { return Stamp{}, false }
