package modstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfisolate/tfisolate/internal/reflink"
	"github.com/tfisolate/tfisolate/internal/store"
)

// Replace stores the tree fill writes as key's entry in place of the
// current one, if any: fill runs under the key's lock (so at most once at
// a time per key across processes, as in Get) into a fresh temp dir, the
// tree is recorded and synced as in Get, then the current entry is moved
// aside in one rename and the new one renamed into place. A process
// killed at any point leaves the old entry, the new one, or none (the
// next Get fills afresh), never a mix; a process reading the old entry
// while it is replaced either finished reading it, or (with Copy) reads
// the new one whole.
//
// keep, when not nil, is asked first, under the lock, with the directory
// of the current entry (only an intact one: a damaged or missing entry is
// always replaced): when it answers true, nothing changes, fill does not
// run, and Replace returns the current entry with replaced false. It lets
// a caller replace an entry only if it is older than what it would write,
// without racing another process doing the same. The returned directory
// is read-only to callers, as Get's is.
func (s *Store) Replace(ctx context.Context, key string, keep func(dir string) (bool, error), fill func(ctx context.Context, dir string) error) (dir string, replaced bool, err error) {
	if key == "" {
		return "", false, fmt.Errorf("modstore: replace: %w: the key is empty", ErrInvalidKey)
	}
	if fill == nil {
		return "", false, fmt.Errorf("modstore: replace %s: %w", keyName(key), ErrNilFill)
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if err := s.checkStore(); err != nil {
		return "", false, fmt.Errorf("modstore: replace %s: %w", keyName(key), err)
	}
	h := hashKey(key)
	unlock, err := s.lock(ctx, key, h)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	s.sweep(h)
	c := s.check(h, key, s.cfg.full)
	if c.state == entryStale {
		c = s.check(h, key, true)
	}
	if c.err != nil {
		return "", false, fmt.Errorf("modstore: replace %s: %w", keyName(key), c.err)
	}
	if keep != nil && c.state == entryOK {
		ok, err := keep(s.treePath(h))
		if err != nil {
			return "", false, fmt.Errorf("modstore: replace %s: %w", keyName(key), err)
		}
		if ok {
			if c.stale {
				s.restamp(h, c)
			}
			return s.treePath(h), false, nil
		}
	}
	if err := s.fill(ctx, key, h, fill); err != nil {
		return "", false, err
	}
	s.fills.Add(1)
	if c.state != entryAbsent {
		s.replaces.Add(1)
	}
	s.cfg.log.Info("replaced entry", "key", key, "entry", s.entryPath(h))
	return s.treePath(h), true, nil
}

// copyAttempts is how many times Copy copies an entry that changes under
// it before it copies under the key's lock.
const copyAttempts = 3

// Copy copies the tree stored for key into dst, filling the entry first
// when there is none, as Get does, and reports whether this call filled.
// dst must not exist; its parent must.
//
// The copy is checked against the entry's manifest by content (every
// path, type, mode, size, symlink target and SHA-256), so it is exactly a
// tree some fill stored for key: never half of one entry and half of the
// one another process's Replace put in its place, and never a damaged
// one. A copy that does not match is removed and taken again, at last
// under the key's lock, where no Replace or repair can run; it still not
// matching means something writes into the store behind its back:
// ErrDamagedEntry. Copying takes no lock otherwise.
func (s *Store) Copy(ctx context.Context, key, dst string, fill func(ctx context.Context, dir string) error) (filled bool, err error) {
	if _, err := os.Lstat(dst); err == nil {
		return false, fmt.Errorf("modstore: copy %s to %s: %w", keyName(key), dst, fs.ErrExist)
	}
	h := hashKey(key)
	why := ""
	for attempt := 1; attempt <= copyAttempts; attempt++ {
		if attempt > 1 {
			s.recopies.Add(1)
			s.cfg.log.Info("the entry changed while it was copied; copying again", "key", key, "problem", why)
			if err := store.RemoveAll(dst); err != nil {
				return filled, fmt.Errorf("modstore: copy %s: remove the bad copy %s: %w", keyName(key), dst, err)
			}
		}
		if attempt < copyAttempts {
			_, f, err := s.Get(ctx, key, fill)
			filled = filled || f
			if err != nil {
				return filled, err
			}
			if why, err = s.copyEntry(h, key, dst); err != nil || why == "" {
				return filled, err
			}
			continue
		}
		if err := s.checkStore(); err != nil {
			return filled, fmt.Errorf("modstore: copy %s: %w", keyName(key), err)
		}
		unlock, err := s.lock(ctx, key, h)
		if err != nil {
			return filled, err
		}
		res, err := s.getHeld(ctx, key, h, fill)
		if err == nil {
			filled = filled || res.filled
			why, err = s.copyEntry(h, key, dst)
		}
		unlock()
		if err != nil || why == "" {
			return filled, err
		}
	}
	_ = store.RemoveAll(dst)
	return filled, fmt.Errorf("modstore: copy %s: %w %s: the copy taken under its lock differs from its manifest: %s", keyName(key), ErrDamagedEntry, s.entryPath(h), why)
}

// copyEntry copies the entry's tree to dst and compares the copy with the
// entry's manifest, read before the copy: why says how they differ, ""
// when they do not. An error is a failure to copy, not a difference,
// except that an entry that vanished while it was copied (a Replace
// setting it aside) is a difference.
func (s *Store) copyEntry(h, key, dst string) (why string, err error) {
	m, err := readManifest(filepath.Join(s.entryPath(h), manifestName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "the entry was gone", nil
		}
		return err.Error(), nil
	}
	if m.Key != key {
		return "it was stored for another " + keyName(m.Key), nil
	}
	s.hook("copying")
	if err := copyTree(dst, s.treePath(h), s.testHookCopied); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "a path went away while it was copied: " + err.Error(), nil
		}
		return "", fmt.Errorf("modstore: copy %s to %s: %w", keyName(key), dst, err)
	}
	_, changes, err := verify(dst, m.Files, true)
	if err != nil {
		return "", fmt.Errorf("modstore: copy %s to %s: %w", keyName(key), dst, err)
	}
	if !changes.Damaged() { // a copy's stamps are its own
		return "", nil
	}
	return changes.Describe(storeWords), nil
}

// copyTree copies the tree at src to dst (which must not exist) exactly:
// directories, regular files (each a new inode) and symlinks, with their
// permission bits. Directories get theirs last, so a read-only one can be
// filled first. copied, when not nil, is called after each regular file.
func copyTree(dst, src string, copied func()) error {
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, mode})
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := copyFile(target, p, mode); err != nil {
				return err
			}
			if copied != nil {
				copied()
			}
			return nil
		default:
			return fmt.Errorf("%w: %s is not a regular file, directory or symlink", ErrBadTree, p)
		}
	})
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(dst, src string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = reflink.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Set after the content, and past the umask: the copy has the mode
	// the manifest records.
	return os.Chmod(dst, mode)
}
