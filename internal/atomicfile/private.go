package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"runtime"
)

// Record and RecordDir are the modes of what the SDK keeps for itself
// (stamps, records, journals, saved plans, logs): its owner's only. A
// record may hold what a user would not show (a plan's values, a
// state's path, a digest of a secret); nobody else needs to read one.
const (
	Record    fs.FileMode = 0o600
	RecordDir fs.FileMode = 0o700
)

// Narrow takes from the file or dir at path every permission bit perm
// does not grant (a record an older release wrote 0644, a dir it made
// 0755), adding none. A missing path is not an error, and a symlink is
// never followed: what it points at is not the SDK's to change. Outside
// Unix (Windows has no such modes) it does nothing.
func Narrow(path string, perm fs.FileMode) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&^perm == 0 {
		return nil
	}
	return os.Chmod(path, fi.Mode().Perm()&perm)
}

// MkdirPrivate makes dir, and every missing dir above it, with mode
// RecordDir, and narrows dir to RecordDir when it exists wider.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, RecordDir); err != nil {
		return err
	}
	return Narrow(dir, RecordDir)
}

// ReadFile reads the file at path, and narrows it, as Narrow does, to
// perm: a record an older release left wider is made private the first
// time it is read again. It narrows the very file it opened, and only
// when path is that regular file itself, never a link's target.
func ReadFile(path string, perm fs.FileMode) ([]byte, error) {
	before, lerr := os.Lstat(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if runtime.GOOS != "windows" && lerr == nil && before.Mode().IsRegular() {
		if fi, err := f.Stat(); err == nil && os.SameFile(before, fi) && fi.Mode().Perm()&^perm != 0 {
			if err := f.Chmod(fi.Mode().Perm() & perm); err != nil {
				return nil, err
			}
		}
	}
	return io.ReadAll(f)
}
