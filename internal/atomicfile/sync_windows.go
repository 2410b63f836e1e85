//go:build windows

package atomicfile

// SyncDir is a no-op on Windows, where directories cannot be fsynced and
// MoveFileEx already orders the rename after the file's own flush.
func SyncDir(dir string) error { return nil }
