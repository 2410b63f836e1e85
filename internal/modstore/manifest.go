package modstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// manifestVersion is the format of manifest.json; an entry with an older
// version is treated as damaged and refilled, never guessed at; one of a
// newer release is refused by name (a *format.NewerError) and left as it
// is: refilling it would replace the newer release's entry with this
// one's.
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

// recordTree records every path under dir with its type, mode, size,
// stamp, symlink target and the SHA-256 of every regular file. Anything
// but directories, regular files and symlinks, or a file that cannot be
// read, is an ErrBadTree naming the path.
func recordTree(dir string) ([]record, error) {
	t, err := treesum.Record(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTree, err)
	}
	return t, nil
}

// verify compares the tree at dir with the manifest's record rec:
// cheaply (treesum.Check: presence, type, mode, size, symlink target and
// stamps; no file read) or, with full, also by content (treesum.Verify).
// now is the tree as it is (the record to keep when only stamps moved,
// after a full check). A tree that cannot be listed is an ErrBadTree.
func verify(dir string, rec []record, full bool) (now []record, changes treesum.Changes, err error) {
	check := treesum.Check
	if full {
		check = treesum.Verify
	}
	now, changes, err = check(dir, rec)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadTree, err)
	}
	return now, changes, nil
}

// readManifest reads and validates an entry's manifest.
func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if _, err := format.Read(path, b, manifestVersion); errors.Is(err, format.ErrNewer) {
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
