package inplace

import (
	"errors"
	"fmt"
	"os"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// Page is the most a record, with its padding, may span.
const Page = 4096

// Rewrite writes data, a newline and spaces up to the file's size over
// the regular file at path, in place (see the package doc), and syncs
// its data when sync is set. A file whose mode grants more than perm (an
// older release wrote it 0644) is narrowed to perm first. It reports
// false, having written nothing, when path is missing, is not a regular
// file, is larger than Page or has no room for data and its newline.
func Rewrite(path string, data []byte, perm os.FileMode, sync bool) (bool, error) {
	before, err := os.Lstat(path)
	if err != nil || !before.Mode().IsRegular() || before.Size() > Page || int64(len(data)) >= before.Size() {
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return false, nil
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(before, fi) || fi.Size() != before.Size() {
		_ = f.Close()
		return false, nil
	}
	if before.Mode().Perm()&^perm != 0 {
		if err := f.Chmod(before.Mode().Perm() & perm); err != nil {
			return true, errors.Join(fmt.Errorf("rewrite %s: %w", path, err), f.Close())
		}
	}
	_, err = f.WriteAt(Pad(data, int(before.Size())), 0)
	if err == nil && sync {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return true, fmt.Errorf("rewrite %s: %w", path, err)
	}
	return true, nil
}

// Pad returns data followed by a newline and spaces up to size bytes in
// all (just data and the newline when size is smaller): the content of a
// new file that later records up to size-1 bytes can be rewritten into.
func Pad(data []byte, size int) []byte {
	size = max(size, len(data)+1)
	out := make([]byte, size)
	copy(out, data)
	out[len(data)] = '\n'
	for i := len(data) + 1; i < size; i++ {
		out[i] = ' '
	}
	return out
}

// WriteFile writes data over the file at path in place (Rewrite, which
// narrows its mode to perm), or, where that cannot be done, replaces the
// file atomically with data padded to size bytes (Pad) and mode perm, so
// that later records up to size-1 bytes are rewritten in place. With
// sync the record is on disk when WriteFile returns, either way.
func WriteFile(path string, data []byte, perm os.FileMode, size int, sync bool) error {
	if ok, err := Rewrite(path, data, perm, sync); ok || err != nil {
		return err
	}
	var opts []atomicfile.Option
	if !sync {
		opts = append(opts, atomicfile.NoSync())
	}
	return atomicfile.WriteFile(path, Pad(data, size), perm, opts...)
}
