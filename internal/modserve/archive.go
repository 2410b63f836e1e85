package modserve

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// DefaultMaxSize bounds a module archive and the tree it unpacks to
// (each), unless WithMaxSize says otherwise: no module the SDK has met
// comes near it, and a download that does never fills a disk.
const DefaultMaxSize = 256 << 20

// packTime is every packed entry's time: the same tree packs to the same
// bytes wherever and whenever it is packed.
var packTime = time.Unix(0, 0).UTC()

// pack writes the tree at dir as a gzip-compressed tar, deterministically
// (paths in the record's order, its modes, a fixed time, no owner), and
// checks every file against rec, the tree's verified record, while it
// reads it: a file that is not what was recorded fails the pack, so what
// it wrote is never taken for the tree. It returns the archive's SHA-256.
func pack(w io.Writer, dir string, rec treesum.Tree) (string, error) {
	sum := sha256.New()
	gz := gzip.NewWriter(io.MultiWriter(w, sum))
	tw := tar.NewWriter(gz)
	for _, e := range rec {
		h := &tar.Header{Name: e.Path, Mode: int64(e.Mode.Perm()), ModTime: packTime, Format: tar.FormatPAX}
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case e.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Target
		case e.Mode.IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, e.Size
		default:
			return "", fmt.Errorf("pack %s: %w: %s is not a file, directory or symlink", dir, ErrBadArchive, e.Path)
		}
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		if h.Typeflag == tar.TypeReg {
			if err := packFile(tw, filepath.Join(dir, filepath.FromSlash(e.Path)), e); err != nil {
				return "", fmt.Errorf("pack %s: %w", dir, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// packFile copies one file into the archive, checking its size and
// SHA-256 against its record.
func packFile(w io.Writer, p string, e treesum.Entry) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(f, e.Size))
	if err != nil {
		return err
	}
	if n != e.Size || hex.EncodeToString(h.Sum(nil)) != e.SHA256 {
		return fmt.Errorf("%s changed since the tree was verified", e.Path)
	}
	return nil
}

// unpack writes the archive in r (format "tar.gz" or "zip") into dir,
// which must exist and be empty: regular files, directories and symlinks
// whose target stays inside the tree, with their permission bits (never
// setuid, setgid or sticky bits, never group or other write bits); a
// path leaving dir, a link leaving the tree, any other kind of entry or
// more than max bytes (archive or tree) is ErrBadArchive, and dir may
// then hold part of the tree (the caller throws it away).
func unpack(r io.Reader, format, dir string, max int64) error {
	switch format {
	case "tar.gz", "tgz":
		return untar(io.LimitReader(r, max+1), dir, max)
	case "zip":
		// zip needs random access: read it whole, within the limit.
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		if err != nil {
			return err
		}
		if int64(len(b)) > max {
			return fmt.Errorf("%w: larger than %d bytes", ErrBadArchive, max)
		}
		return unzip(b, dir, max)
	}
	return fmt.Errorf("%w: format %q is neither tar.gz nor zip", ErrBadArchive, format)
}

func untar(r io.Reader, dir string, max int64) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadArchive, err)
	}
	tr := tar.NewReader(gz)
	u := unpacker{dir: dir, left: max}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.dir_(h.Name, mode)
		case tar.TypeReg:
			err = u.file(h.Name, mode, tr)
		case tar.TypeSymlink:
			err = u.symlink(h.Name, h.Linkname)
		case tar.TypeXGlobalHeader:
			continue
		default:
			err = fmt.Errorf("%w: %s is neither a file, a directory nor a symlink", ErrBadArchive, h.Name)
		}
		if err != nil {
			return err
		}
	}
	return u.finish()
}

func unzip(b []byte, dir string, max int64) error {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadArchive, err)
	}
	u := unpacker{dir: dir, left: max}
	for _, f := range zr.File {
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = u.dir_(f.Name, mode.Perm())
		case mode.IsRegular():
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				err = u.file(f.Name, mode.Perm(), rc)
				rc.Close()
			}
		case mode&fs.ModeSymlink != 0:
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				var target []byte
				target, err = io.ReadAll(io.LimitReader(rc, 4096))
				rc.Close()
				if err == nil {
					err = u.symlink(f.Name, string(target))
				}
			}
		default:
			err = fmt.Errorf("%w: %s is neither a file, a directory nor a symlink", ErrBadArchive, f.Name)
		}
		if err != nil {
			return err
		}
	}
	return u.finish()
}

// unpacker writes an archive's entries below dir.
type unpacker struct {
	dir  string
	left int64 // bytes the tree may still take
	dirs []dirMode
}

type dirMode struct {
	path string
	mode fs.FileMode
}

// target is the path name (slash-separated, relative) names below dir,
// or an error when it leaves dir or names dir itself.
func (u *unpacker) target(name string) (string, error) {
	clean := path.Clean(strings.TrimSuffix(name, "/"))
	if name == "" || path.IsAbs(name) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, `\`) {
		return "", fmt.Errorf("%w: the path %q leaves the tree", ErrBadArchive, name)
	}
	return filepath.Join(u.dir, filepath.FromSlash(clean)), nil
}

// parents makes the missing dirs above p (archives may leave them out).
func (u *unpacker) parents(p string) error {
	return os.MkdirAll(filepath.Dir(p), 0o755)
}

func (u *unpacker) dir_(name string, mode fs.FileMode) error {
	p, err := u.target(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return err
	}
	// Set last, so a read-only dir can be filled first.
	u.dirs = append(u.dirs, dirMode{p, mode&^0o022 | 0o700})
	return nil
}

func (u *unpacker) file(name string, mode fs.FileMode, r io.Reader) error {
	p, err := u.target(name)
	if err != nil {
		return err
	}
	if err := u.parents(p); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadArchive, name, err) // twice, or over a dir or link
	}
	n, err := io.Copy(f, io.LimitReader(r, u.left+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if u.left -= n; u.left < 0 {
		return fmt.Errorf("%w: the tree is larger than the size limit", ErrBadArchive)
	}
	return os.Chmod(p, mode&^0o022)
}

func (u *unpacker) symlink(name, target string) error {
	p, err := u.target(name)
	if err != nil {
		return err
	}
	// A link is resolved from its own dir and must land inside the tree.
	rel, err := filepath.Rel(u.dir, p)
	if err != nil {
		return err
	}
	within := path.Join(path.Dir(filepath.ToSlash(rel)), target)
	if target == "" || path.IsAbs(target) || within == ".." || strings.HasPrefix(within, "../") {
		return fmt.Errorf("%w: the link %s points out of the tree (%q)", ErrBadArchive, name, target)
	}
	if err := u.parents(p); err != nil {
		return err
	}
	if err := os.Symlink(target, p); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadArchive, name, err)
	}
	return nil
}

// finish gives the dirs their modes, deepest first.
func (u *unpacker) finish() error {
	for _, d := range slices.Backward(u.dirs) {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	return nil
}
