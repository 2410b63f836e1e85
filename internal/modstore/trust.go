package modstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// The store believes only what the effective user or root wrote
// (invariant 12, internal/pathtrust): its directory, every directory
// above it (a sticky one, as /tmp is, may be writable by all) and its own
// state dirs must be theirs and writable by no one else, or the store is
// refused by name; an entry (its dir, manifest, tree and every path in
// it) must be theirs and writable by no one else, or it is treated as
// damaged: moved aside and refilled into a private entry.

// unsafe turns what pathtrust found into this package's error.
func unsafe(u *pathtrust.Unsafe, err error) error {
	if err != nil {
		return fmt.Errorf("modstore: %w", err)
	}
	if u == nil {
		return nil
	}
	return &UnsafePathError{Path: u.Path, UID: u.UID, GID: u.GID, Mode: u.Mode, Why: u.Why}
}

// checkStore checks the store dir and its state dirs, on every use:
// what passed at Open may have been changed since.
func (s *Store) checkStore() error {
	p := pathtrust.Effective()
	for _, rel := range []string{filepath.Join(stateDir, locksDir), filepath.Join(stateDir, tmpDir)} {
		if err := unsafe(p.CheckInside(s.dir, rel)); err != nil {
			return err
		}
	}
	return nil
}

// foreignEntry says why the entry at dir (its dir, manifest, tree and
// every path in the tree) could have been written by someone other than
// the effective user or root, or "" when it could not.
func foreignEntry(entry string) string {
	p := pathtrust.Effective()
	for _, rel := range []string{"", manifestName, treeDir} {
		q := filepath.Join(entry, rel)
		fi, err := os.Lstat(q)
		if err != nil {
			return "" // missing: check tells
		}
		if why := p.Foreign(fi); why != "" {
			return q + " " + why
		}
	}
	why := ""
	tree := filepath.Join(entry, treeDir)
	_ = filepath.WalkDir(tree, func(q string, d fs.DirEntry, err error) error {
		if err != nil || q == tree {
			return nil // unreadable: the scan reports it
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A link's own mode means nothing; its owner does.
			fi = ownerOnly{fi}
		}
		if w := p.Foreign(fi); w != "" {
			why = q + " " + w
			return filepath.SkipAll
		}
		return nil
	})
	return why
}

// ownerOnly is a symlink's info with its meaningless mode bits dropped.
type ownerOnly struct{ fs.FileInfo }

func (o ownerOnly) Mode() fs.FileMode { return o.FileInfo.Mode() &^ fs.ModePerm }

// private takes the write bits of group and others off every path fill
// wrote (a module's files can come with any mode, umask 0 included), so
// what the store keeps is writable by no one else.
func private(tree string) error {
	return filepath.WalkDir(tree, func(q string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if m := fi.Mode(); m.Perm()&0o022 != 0 {
			return os.Chmod(q, m.Perm()&^0o022|m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		}
		return nil
	})
}
