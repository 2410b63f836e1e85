package treesum

import (
	"crypto/sha256"
	"io/fs"
	"sync"
	"time"
)

// A Memo remembers the SHA-256 of regular files by path and version, so
// that a process hashing one file for many callers (one component source
// under a hundred instance workdirs) reads it once. A remembered digest
// is handed out only while the file's stamp (inode, mtime and ctime; see
// Stamp), size and mode are exactly what they were when it was read; any
// write, replacement or chmod moves the stamp and the file is read again.
//
// A digest is remembered only when the file's last change lies clearly
// before the read began (racyWindow, wider on filesystems that keep whole
// seconds): a write landing in the same timestamp tick as the read could
// otherwise leave the stamp unchanged beside new content, the race git
// calls "racily clean". Such a file is simply read again next time, by
// when its change is old enough.
//
// The zero value is ready to use; a nil *Memo remembers nothing. A Memo
// is safe for concurrent use. It holds at most memoMax files and forgets
// them all when full: a memo is a cache, never a record.
type Memo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	stamp Stamp
	size  int64
	mode  fs.FileMode
	sum   [sha256.Size]byte
}

// memoMax bounds a Memo: about 100 bytes a file, so 10 MB at most.
const memoMax = 1 << 17

// racyWindow is how long before a read a file must have last changed
// for its digest to be remembered, on filesystems with sub-second
// timestamps (a few kernel clock ticks); racyWindowCoarse is for
// filesystems that keep whole seconds (FAT keeps two).
const (
	racyWindow       = 50 * time.Millisecond
	racyWindowCoarse = 2 * time.Second
)

// Lookup returns the digest remembered for the file at path if fi (a
// fresh stat of it, links followed) shows the version it was read from.
func (m *Memo) Lookup(path string, fi fs.FileInfo) (sum [sha256.Size]byte, ok bool) {
	if m == nil || !fi.Mode().IsRegular() {
		return sum, false
	}
	m.mu.Lock()
	e, ok := m.m[path]
	m.mu.Unlock()
	if !ok || e.stamp != stampOf(fi) || e.size != fi.Size() || e.mode != fi.Mode() {
		return sum, false
	}
	return e.sum, true
}

// Remember records sum as the digest of the file at path, read from the
// version fi describes (the stat of the opened file, taken before its
// content was read) in a read that began at start. A version changed
// too close to start (see Memo) is not remembered.
func (m *Memo) Remember(path string, fi fs.FileInfo, start time.Time, sum [sha256.Size]byte) {
	if m == nil || !fi.Mode().IsRegular() {
		return
	}
	st := stampOf(fi)
	last := max(st.Mtime, st.Ctime)
	window := racyWindow
	if st.Mtime%int64(time.Second) == 0 && st.Ctime%int64(time.Second) == 0 {
		window = racyWindowCoarse
	}
	if last >= start.Add(-window).UnixNano() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= memoMax {
		m.m = map[string]memoEntry{}
	}
	m.m[path] = memoEntry{stamp: st, size: fi.Size(), mode: fi.Mode(), sum: sum}
}
