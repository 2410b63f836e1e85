package pluginc

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// unzipOptions are the limits and hooks of one unpack.
type unzipOptions struct {
	name    string // the archive's URL or path, for errors
	maxSize int64  // total unpacked bytes allowed; 0 means DefaultMaxUnpackedSize
	hook    func() // runs after the first entry is unpacked (tests)
	// writer wraps every file writer (tests inject write failures).
	writer func(io.Writer) io.Writer
}

// unzip extracts the zip in f into dir (which must not exist) and fsyncs
// every file and directory, so a rename of dir publishes durable content.
// Entries that would escape dir, links, special files, duplicate entries
// and archives unpacking to more than the size limit are refused with
// ErrBadPackage and an error naming the archive and the entry. A failed
// write (a full disk) is reported as the write error it is.
func unzip(f *os.File, dir string, o unzipOptions) error {
	if o.maxSize <= 0 {
		o.maxSize = DefaultMaxUnpackedSize
	}
	name := o.name
	if name == "" {
		name = f.Name()
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrBadPackage, name, err)
	}
	// The headers may lie, so the limit is enforced while copying too;
	// checking them first refuses an honest bomb before writing a byte.
	var declared uint64
	for _, zf := range zr.File {
		declared += zf.UncompressedSize64
		if declared > uint64(o.maxSize) {
			return fmt.Errorf("%w %s: unpacks to more than the limit of %d bytes", ErrBadPackage, name, o.maxSize)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	dirs := []string{dir}
	seen := map[string]bool{}
	budget := o.maxSize
	for i, zf := range zr.File {
		entry := zf.Name
		clean := path.Clean(entry)
		if entry == "" || strings.HasPrefix(entry, "/") || strings.Contains(entry, `\`) || clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(entry) {
			return fmt.Errorf("%w %s: entry %q escapes the package directory", ErrBadPackage, name, entry)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("%w %s: entry %q: %w", ErrBadPackage, name, entry, err)
			}
			dirs = append(dirs, target)
			continue
		case !mode.IsRegular():
			return fmt.Errorf("%w %s: entry %q is not a regular file", ErrBadPackage, name, entry)
		}
		if seen[clean] {
			return fmt.Errorf("%w %s: entry %q appears more than once", ErrBadPackage, name, entry)
		}
		seen[clean] = true
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("%w %s: entry %q: %w", ErrBadPackage, name, entry, err)
		}
		n, err := extractFile(zf, target, (mode.Perm()|0o400)&^0o022, budget, o.writer)
		if err != nil {
			if errors.Is(err, errTooBig) {
				return fmt.Errorf("%w %s: entry %q: unpacks to more than the limit of %d bytes", ErrBadPackage, name, entry, o.maxSize)
			}
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%w %s: entry %q collides with another entry", ErrBadPackage, name, entry)
			}
			return fmt.Errorf("unpack %s: %w", name, err)
		}
		budget -= n
		if i == 0 && o.hook != nil {
			o.hook()
		}
	}
	for _, d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

var errTooBig = errors.New("over the unpacked size limit")

// extractFile writes one entry, at most budget bytes of it. Errors
// reading the archive wrap ErrBadPackage; write errors are returned as
// they are.
func extractFile(zf *zip.File, target string, perm os.FileMode, budget int64, wrap func(io.Writer) io.Writer) (int64, error) {
	rc, err := zf.Open()
	if err != nil {
		return 0, fmt.Errorf("%w: entry %q: %v", ErrBadPackage, zf.Name, err)
	}
	defer rc.Close()
	out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return 0, err
	}
	var w io.Writer = out
	if wrap != nil {
		w = wrap(out)
	}
	rec := &writeRecorder{w: w}
	n, err := io.Copy(rec, io.LimitReader(rc, budget+1))
	if rec.err != nil {
		out.Close()
		return n, rec.err
	}
	if err != nil {
		out.Close()
		return n, fmt.Errorf("%w: entry %q: %v", ErrBadPackage, zf.Name, err)
	}
	if n > budget {
		out.Close()
		return n, errTooBig
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return n, err
	}
	return n, out.Close()
}
