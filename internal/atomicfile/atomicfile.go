package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temp file this package creates, so
// callers can recognise (and sweep) leftovers of killed writers.
const TempPrefix = ".tmp-"

// File is a pending replacement of a target path. Write to it like any
// *os.File, then call CloseAtomicallyReplace.
type File struct {
	*os.File
	path   string
	done   bool
	perm   os.FileMode
	noSync bool
}

// Option changes how a File is written.
type Option func(*File)

// NoSync skips the fsyncs: the replacement is still atomic for concurrent
// readers and across a killed writer, but may be lost (as a whole) in a
// power failure. For diagnostics and caches that are cheap to rebuild.
func NoSync() Option { return func(f *File) { f.noSync = true } }

// New creates a temp file next to path that will replace path. The temp file
// gets exactly perm (no umask) once it is renamed into place.
func New(path string, perm os.FileMode, opts ...Option) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+base+"-*")
	if err != nil {
		return nil, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	af := &File{File: f, path: path, perm: perm}
	for _, o := range opts {
		o(af)
	}
	return af, nil
}

// Cleanup closes and removes the temp file unless CloseAtomicallyReplace
// already succeeded. It is meant to be deferred right after New.
func (f *File) Cleanup() error {
	if f.done {
		return nil
	}
	f.done = true
	cerr := f.File.Close()
	rerr := os.Remove(f.File.Name())
	if rerr != nil && !os.IsNotExist(rerr) {
		return rerr
	}
	if cerr != nil && !isAlreadyClosed(cerr) {
		return cerr
	}
	return nil
}

// CloseAtomicallyReplace makes the content durable, then renames the temp
// file over the target and syncs the directory entry.
func (f *File) CloseAtomicallyReplace() error {
	if f.done {
		return fmt.Errorf("replace %s: file already closed", f.path)
	}
	if err := f.File.Chmod(f.perm); err != nil {
		return fmt.Errorf("replace %s: %w", f.path, err)
	}
	if !f.noSync {
		if err := f.File.Sync(); err != nil {
			return fmt.Errorf("replace %s: sync: %w", f.path, err)
		}
	}
	if err := f.File.Close(); err != nil {
		return fmt.Errorf("replace %s: close: %w", f.path, err)
	}
	if err := os.Rename(f.File.Name(), f.path); err != nil {
		return fmt.Errorf("replace %s: %w", f.path, err)
	}
	f.done = true
	if f.noSync {
		return nil
	}
	return SyncDir(filepath.Dir(f.path))
}

// WriteFile atomically replaces path with data.
func WriteFile(path string, data []byte, perm os.FileMode, opts ...Option) error {
	f, err := New(path, perm, opts...)
	if err != nil {
		return err
	}
	defer f.Cleanup()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.CloseAtomicallyReplace()
}

// WriteFileIfChanged is WriteFile that skips the write (and reports false)
// when path already holds exactly data with the same permission bits.
func WriteFileIfChanged(path string, data []byte, perm os.FileMode, opts ...Option) (bool, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == perm.Perm() && fi.Size() == int64(len(data)) {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return false, nil
		}
	}
	return true, WriteFile(path, data, perm, opts...)
}

func isAlreadyClosed(err error) bool { return errors.Is(err, os.ErrClosed) }
