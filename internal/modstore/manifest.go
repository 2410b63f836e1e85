package modstore

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// manifestVersion is the format of manifest.json; an entry with any other
// version is treated as damaged and refilled, never guessed at.
const manifestVersion = 1

// manifest is an entry's record of what was stored: the key it belongs to
// and every path of its tree. It lives in the entry dir beside the tree
// (never inside it, so a caller copying the tree copies exactly what fill
// wrote) and is written before the entry is renamed into place, so
// whoever sees an entry sees its manifest.
type manifest struct {
	Version int          `json:"version"`
	Key     string       `json:"key"`
	Files   treesum.Tree `json:"files"` // sorted by Path
}

// record is one path of a tree: a directory, a regular file or a symlink,
// as treesum records it (the manifest's format is treesum's).
type record = treesum.Entry

// storeWords is how a difference from the manifest is told.
var storeWords = treesum.Words{Tree: "the stored tree", When: "stored"}

// scan records every path under dir with its type, mode, size, stamp and
// symlink target, and with hashes the SHA-256 of every regular file.
// Anything but directories, regular files and symlinks, or a file that
// cannot be read, is an ErrBadTree naming the path.
func scan(dir string, hashes bool) ([]record, error) {
	list := treesum.Scan
	if hashes {
		list = treesum.Record
	}
	t, err := list(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTree, err)
	}
	return t, nil
}

// diff says how the paths in now differ from the manifest's by presence,
// type, mode, size, symlink target and (if hashes) content, or returns ""
// when they do not. Stamps are not compared here: see stale.
func diff(now, rec []record, hashes bool) string {
	cs := treesum.Compare(rec, now)
	if !hashes {
		cs = slices.DeleteFunc(cs, func(c treesum.Change) bool { return c.Kind == treesum.ContentChanged })
	}
	if !cs.Damaged() {
		return ""
	}
	return cs.Describe(storeWords)
}

// stale reports whether any regular file's stamp differs from the
// manifest's. Call it only when diff found nothing.
func stale(now, rec []record) bool {
	return treesum.Compare(rec, now).Stale()
}

// readManifest reads and validates an entry's manifest.
func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("manifest %s has version %d, want %d", path, m.Version, manifestVersion)
	}
	if err := m.Files.Validate(); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return &m, nil
}

// encode returns the manifest as written to disk.
func (m *manifest) encode() ([]byte, error) {
	return json.MarshalIndent(m, "", " ")
}
