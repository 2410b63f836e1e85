package reflink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyTree copies the tree at src into dst (created if missing): regular
// files (by Copy: cloned where the filesystem can, always a new inode, so
// whoever writes a copy never touches the source or another copy),
// directories and symlinks (copied as links, their targets as written),
// keeping permission bits: a directory is always open to its owner
// (rwx, so the copy can be filled and removed), a file gets its mode less
// the umask. A file that already exists in dst is an error, never
// overwritten. Anything but a directory, a regular file or a symlink is
// refused. On error, what was copied so far stays: copy into a temp dir
// to remove it.
func CopyTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(target, p, info.Mode().Perm())
		default:
			return fmt.Errorf("copy %s: not a regular file, directory or symlink", p)
		}
	})
}

func copyFile(dst, src string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = Copy(out, in)
	return errors.Join(err, out.Close())
}
