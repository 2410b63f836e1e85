//go:build !linux

package atomicfile

// SyncFS flushes dirty file data before a final marker is written. Outside
// Linux there is no per-filesystem sync, so it falls back to sync(2) where
// that exists and is a no-op on Windows (see syncall_*.go).
func SyncFS(dir string) error {
	syncAll()
	return nil
}
