package modtree

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// ErrNotRegular is wrapped by OpenRegular's error for anything that is not
// a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading without ever blocking in open:
// O_NONBLOCK makes opening a FIFO return at once, and anything but a
// regular file (after following symlinks) is then refused with an error
// wrapping ErrNotRegular. On a regular file O_NONBLOCK changes nothing.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, nil
}

// regularFS is the filesystem the walk hands terraform-config-inspect:
// directory listings show only directories and the regular files
// terraform reads as configuration (links followed), and files are opened with OpenRegular, so a FIFO named
// main.tf is never read (the default filesystem would block on it
// forever).
type regularFS struct {
	skipped []string
}

var _ tfconfig.FS = (*regularFS)(nil)

func (f *regularFS) Open(name string) (tfconfig.File, error) { return OpenRegular(name) }

func (f *regularFS) ReadFile(name string) ([]byte, error) {
	fh, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(fh)
}

func (f *regularFS) ReadDir(dir string) ([]os.FileInfo, error) {
	ents, err := os.ReadDir(dir)
	out := make([]os.FileInfo, 0, len(ents))
	for _, de := range ents {
		fi, serr := os.Stat(filepath.Join(dir, de.Name())) // follows links; Name stays the link's
		// Only what terraform reads as a module's files: terraform-config-
		// inspect also reads files terraform ignores in a module (a
		// Stacks *.tfcomponent.hcl, which it panics on).
		if serr == nil && (fi.IsDir() || fi.Mode().IsRegular() && configName(de.Name())) {
			out = append(out, fi)
			continue
		}
		if configName(de.Name()) {
			f.skipped = append(f.skipped, de.Name())
		}
	}
	return out, err
}

// configName reports names terraform would read as configuration.
func configName(name string) bool {
	return !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".tf") || strings.HasSuffix(name, ".tf.json"))
}
