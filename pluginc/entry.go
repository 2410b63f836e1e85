package pluginc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// metaVersion is the install record's format (internal/format): 2, the
// first to name it; a newer release's record is refused by name and its
// entry left as it is.
const metaVersion = 2

// meta is the install record of a package: what was verified when it was
// installed. It lives outside the package dir, so it never changes the h1:
// hash, and it is written before the package is renamed into place, so
// whoever sees the package sees its record.
type meta struct {
	// Version is the record's format (metaVersion when written; 1, none
	// named, in earlier releases').
	Version int      `json:"version,omitempty"`
	Hashes  []string `json:"hashes"` // lock file hashes: h1: and the zh: of every platform when signed
	Zip     string   `json:"zip"`    // zh: of the zip it was unpacked from, verified against the source; empty when packed from an unpacked mirror
	Source  string   `json:"source"`
	H1      string   `json:"h1,omitempty"` // h1: of the unpacked files below
	// Files is every path of the package as it was verified (treesum's
	// record: each file's path, mode, size, SHA-256 and stamp, each
	// directory's path and mode). Records from before per-file records
	// have none; records from before directories were recorded list only
	// the files (see beforeDirs).
	Files treesum.Tree `json:"files,omitempty"`
}

// installWords is how a difference from the install record is told.
var installWords = treesum.Words{Tree: "the package", When: "installed"}

// h1Of returns the package's h1: hash from the file records: dirhash's
// Hash1 over the same files, without reading them again. Directories do
// not count (Terraform's h1: lists files only); anything else that is not
// a regular file makes the package one Terraform would not install.
func h1Of(files treesum.Tree) (string, error) {
	recs := slices.Clone(files)
	slices.SortFunc(recs, func(a, b treesum.Entry) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range recs {
		switch {
		case f.Mode.IsDir():
			continue
		case !f.Mode.IsRegular():
			return "", fmt.Errorf("%w: %s is not a regular file", ErrBadPackage, f.Path)
		case strings.Contains(f.Path, "\n"):
			return "", fmt.Errorf("%w: file name %q contains a newline", ErrBadPackage, f.Path)
		}
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// lockH1 returns the h1: among the lock hashes.
func (m *meta) lockH1() string {
	if m.H1 != "" {
		return m.H1
	}
	for _, h := range m.Hashes {
		if strings.HasPrefix(h, "h1:") {
			return h
		}
	}
	return ""
}

// recordDir records every path of the package dir and hashes every file:
// the full record of what is there now.
func recordDir(dir string) (treesum.Tree, error) { return treesum.Record(dir) }

// quickCheck compares what is in dir now with the install record without
// reading any file: names, types, modes, sizes and stamps. It returns ""
// when everything matches, or what differs.
func quickCheck(dir string, m *meta) string {
	switch {
	case len(m.Files) == 0:
		return "its install record lists no files"
	case beforeDirs(m.Files):
		// Its directories are not recorded: the files' content decides
		// (reverify), and the record is written anew with them.
		return "its install record is from before directories were recorded"
	}
	_, changes, err := treesum.Check(dir, m.Files)
	if err != nil {
		return err.Error()
	}
	return changes.Describe(installWords)
}

// verifyFiles reads and hashes every file of dir and says how it differs
// from the install record rec by name, type, size, mode and content, or
// "" when it does not; now is the tree as it is, the record to keep.
// Stamps are not compared. Against a record from before directories
// were recorded, directories found now are not differences.
func verifyFiles(dir string, rec treesum.Tree) (now treesum.Tree, why string, err error) {
	now, cs, err := treesum.Verify(dir, rec)
	if err != nil {
		return nil, "", err
	}
	old := beforeDirs(rec)
	cs = slices.DeleteFunc(cs, func(c treesum.Change) bool {
		return c.Kind == treesum.Added && c.Found.Mode.IsDir() && old
	})
	if !cs.Damaged() {
		return now, "", nil
	}
	return now, cs.Describe(installWords), nil
}

// beforeDirs reports whether files is a record written before directories
// were recorded: it lists a file in a directory but not the directory. (A
// package with no directories has the same record either way.)
func beforeDirs(files treesum.Tree) bool {
	dirs := make(map[string]bool)
	for _, f := range files {
		if f.Mode.IsDir() {
			dirs[f.Path] = true
		}
	}
	for _, f := range files {
		if d := path.Dir(f.Path); d != "." && !dirs[d] {
			return true
		}
	}
	return false
}

// readMeta reads the install record at path.
func readMeta(file string) (*meta, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if _, err := format.Read(file, b, metaVersion); errors.Is(err, format.ErrNewer) {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("install record %s: %w", file, err)
	}
	if len(m.Hashes) == 0 || m.lockH1() == "" {
		return nil, fmt.Errorf("install record %s has no h1: hash", file)
	}
	if err := m.Files.Validate(); err != nil {
		return nil, fmt.Errorf("install record %s: %w", file, err)
	}
	return &m, nil
}
