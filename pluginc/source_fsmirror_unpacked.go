package pluginc

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Terraform's unpacked filesystem mirror layout holds each package as a
// directory, DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/, as terraform
// providers mirror never writes it but plugin directories and this cache
// do. The cache installs from such a directory by packing it into the
// same temp zip a download would fill, so that one path verifies,
// unpacks and records every install.

// unpackedVersion reports whether name, an entry of a provider's
// directory, is a version directory of the unpacked layout.
func unpackedVersion(typeDir, name string) bool {
	fi, err := os.Stat(filepath.Join(typeDir, name)) // version dirs may be symlinks
	return err == nil && fi.IsDir()
}

// zipDir packs the regular files under dir into dst as a zip (stored, not
// compressed: it is unpacked again at once) and returns the bytes
// written. File modes travel in the zip, so executables stay executable.
// A symlink or special file inside the package is refused with
// ErrBadPackage, as unzip would refuse it.
func zipDir(ctx context.Context, dir string, dst io.Writer) (int64, error) {
	root, err := filepath.EvalSymlinks(dir) // the OS_ARCH dir itself may be a link
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: dst}
	zw := zip.NewWriter(cw)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == root || d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w %s: %s is not a regular file", ErrBadPackage, dir, filepath.ToSlash(rel))
		}
		h, err := zip.FileInfoHeader(fi)
		if err != nil {
			return err
		}
		h.Name, h.Method = filepath.ToSlash(rel), zip.Store
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	if err != nil {
		return cw.n, err
	}
	if err := zw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
