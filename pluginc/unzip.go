package pluginc

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// unzip extracts the zip in f into dir (which must not exist) and fsyncs
// every file and directory, so a rename of dir publishes durable content.
// Entries that would escape dir, links and special files are refused.
func unzip(f *os.File, dir string, hook func()) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadPackage, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	dirs := []string{dir}
	for i, zf := range zr.File {
		name := zf.Name
		clean := path.Clean(name)
		if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(name) {
			return fmt.Errorf("%w: entry %q escapes the package directory", ErrBadPackage, name)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, target)
			continue
		case !mode.IsRegular():
			return fmt.Errorf("%w: entry %q is not a regular file", ErrBadPackage, name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := extractFile(zf, target, mode.Perm()|0o400); err != nil {
			return err
		}
		if i == 0 && hook != nil {
			hook()
		}
	}
	for _, d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func extractFile(zf *zip.File, target string, perm os.FileMode) error {
	rc, err := zf.Open()
	if err != nil {
		return fmt.Errorf("%w: entry %q: %v", ErrBadPackage, zf.Name, err)
	}
	defer rc.Close()
	out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		return fmt.Errorf("%w: entry %q: %v", ErrBadPackage, zf.Name, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
