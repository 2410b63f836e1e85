package treesum

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Tree is the record of a directory tree: one Entry per path below its
// root, sorted by Path. Its JSON form is an array of entries.
type Tree []Entry

// An Entry is one path of a tree as it was recorded.
type Entry struct {
	// Path is slash-separated and relative to the root.
	Path string `json:"path"`
	// Mode holds the type bits (directory, symlink or none for a regular
	// file) and the permission bits.
	Mode fs.FileMode `json:"mode"`
	// Size is a regular file's size in bytes; zero for anything else.
	Size int64 `json:"size,omitempty"`
	// SHA256 is a regular file's content hash in lowercase hex, as
	// Record and HashFile make it; empty for anything else, and in trees
	// from Scan.
	SHA256 string `json:"sha256,omitempty"`
	// Target is a symlink's target as it reads, never resolved.
	Target string `json:"target,omitempty"`
	// Stamp is a regular file's stamp (see Stamp); zero for anything
	// else.
	Stamp Stamp `json:"stamp,omitzero"`
}

// Record lists the tree at dir and hashes every regular file: the full
// record of what is there now.
func Record(dir string) (Tree, error) { return walk(dir, true) }

// Scan lists the tree at dir as Record does but reads no file's content:
// its entries have no SHA256. It is what Check compares.
func Scan(dir string) (Tree, error) { return walk(dir, false) }

func walk(root string, hash bool) (Tree, error) {
	verb := "scan"
	if hash {
		verb = "record"
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("treesum: %s tree: %w", verb, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("treesum: %s tree %s: it is a %s: %w", verb, root, typeName(fi.Mode()), ErrNotDir)
	}
	var t Tree
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info() // lstat: WalkDir never follows links
		if err != nil {
			return err
		}
		e := Entry{Path: rel, Mode: fi.Mode()}
		switch {
		case fi.IsDir():
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.Target, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular() && hash:
			if e, err = hashEntry(p, rel); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			e.Size, e.Stamp = fi.Size(), stampOf(fi)
		default:
			return specialFile(rel, fi.Mode())
		}
		t = append(t, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("treesum: %s tree %s: %w", verb, root, err)
	}
	// WalkDir's order is per directory ("a", "a/b", "a.txt"); a Tree's is
	// by whole path ("a", "a.txt", "a/b").
	slices.SortFunc(t, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return t, nil
}

// hashEntry opens the regular file at p (rel inside the tree) and records
// it from the open file: mode, size and stamp from fstat before reading,
// then the hash, so all of them describe the one inode that was read, and
// a write after the stamp was taken changes it.
func hashEntry(p, rel string) (Entry, error) {
	// Not following links and not blocking: a file swapped for a symlink
	// or a FIFO since it was listed is refused, never waited on.
	f, err := openNoFollow(p)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, specialFile(rel, fi.Mode())
	}
	sum, err := hashReader(f)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", rel, err)
	}
	return Entry{Path: rel, Mode: fi.Mode(), Size: fi.Size(), SHA256: sum, Stamp: stampOf(fi)}, nil
}

// HashFile returns the SHA-256 of the file at path in the form
// Entry.SHA256 takes (lowercase hex).
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashReader(f)
}

func hashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func specialFile(rel string, m fs.FileMode) error {
	return fmt.Errorf("%s is a %s, %w", rel, typeName(m), ErrSpecialFile)
}

// typeName names a mode's type for messages: "regular file", "named pipe".
func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file (" + m.String() + ")"
	}
}

// Validate reports whether t is a record Record could have made: paths
// valid (slash-separated, relative, no "." or ".." elements), sorted and
// unique; every entry a directory, regular file or symlink; every regular
// file with a SHA-256 and every symlink with a target. Records read from
// disk are validated before they are trusted to describe anything.
func (t Tree) Validate() error {
	for i, e := range t {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s", ErrBadRecord, fmt.Sprintf(format, args...))
		}
		switch {
		case e.Path == "." || !fs.ValidPath(e.Path):
			return bad("path %q is not a relative slash-separated path inside the tree", e.Path)
		case i > 0 && t[i-1].Path >= e.Path:
			return bad("paths are not sorted and unique at %s", e.Path)
		case e.Size < 0:
			return bad("%s has a negative size", e.Path)
		case e.Mode.IsRegular() && !isSHA256(e.SHA256):
			return bad("%s has no SHA-256", e.Path)
		case e.Mode&fs.ModeSymlink != 0 && e.Target == "":
			return bad("%s is a symlink without a target", e.Path)
		case !e.Mode.IsRegular() && !e.Mode.IsDir() && e.Mode.Type() != fs.ModeSymlink:
			return bad("%s is a %s", e.Path, typeName(e.Mode))
		}
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
