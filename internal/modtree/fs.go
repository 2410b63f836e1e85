package modtree

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
// directory listings show only directories and the configuration files
// the engine's rule selects (links followed; see Files.Select), and
// files are opened with OpenRegular, so a FIFO named main.tf is never
// read (the default filesystem would block on it forever).
//
// terraform-config-inspect knows only terraform's extensions: under
// TofuFiles a NAME.tofu is listed as NAME.tf (and NAME.tofu.json as
// NAME.tf.json), which cannot clash with a real NAME.tf because the
// .tofu file hides it; real maps each such listed path back to the file
// that is read.
type regularFS struct {
	files   Files
	skipped []string
	real    map[string]string // listed path -> real path, for renamed OpenTofu files
	// Set by snapshot: the listing of dir and the content of each listed
	// file, served to terraform-config-inspect instead of the disk, so
	// that what it parses is exactly what the memo key was made from.
	listed  bool
	dir     string
	listing []os.FileInfo
	listErr error
	content map[string][]byte // listed path -> content
}

var _ tfconfig.FS = (*regularFS)(nil)

func (f *regularFS) path(name string) string {
	if r, ok := f.real[name]; ok {
		return r
	}
	return name
}

func (f *regularFS) Open(name string) (tfconfig.File, error) { return OpenRegular(f.path(name)) }

func (f *regularFS) ReadFile(name string) ([]byte, error) {
	if b, ok := f.content[name]; ok {
		return b, nil
	}
	return ReadRegular(f.path(name))
}

// snapshot lists dir and reads every configuration file it lists, and
// returns a digest of what the parse will see: the engine's rule, and
// each file's listed name, real name and content. ok is false when the
// listing or a file could not be read: the parse then reads the disk
// itself and reports it, and nothing is memoized.
func (f *regularFS) snapshot(dir string) (key [sha256.Size]byte, ok bool) {
	listing, err := f.ReadDir(dir)
	f.listed, f.dir, f.listing, f.listErr, f.content = true, dir, listing, err, map[string][]byte{}
	if err != nil {
		return key, false
	}
	h := sha256.New()
	fmt.Fprintf(h, "modtree-parse-v1\x00%s\n", f.files)
	for _, fi := range listing {
		if fi.IsDir() {
			continue
		}
		listed := filepath.Join(dir, fi.Name())
		b, err := ReadRegular(f.path(listed))
		if err != nil {
			return key, false
		}
		f.content[listed] = b
		fmt.Fprintf(h, "%s\x00%s\x00%d\n", fi.Name(), filepath.Base(f.path(listed)), len(b))
		h.Write(b)
	}
	h.Sum(key[:0])
	return key, true
}

// ReadRegular reads the regular file at path (links followed); anything
// else (a FIFO, a socket, a device, a directory) is refused with an error
// wrapping ErrNotRegular, never opened in a way that could block.
func ReadRegular(path string) ([]byte, error) {
	fh, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(fh)
}

func (f *regularFS) ReadDir(dir string) ([]os.FileInfo, error) {
	if f.listed && dir == f.dir {
		return f.listing, f.listErr
	}
	ents, err := os.ReadDir(dir)
	out := make([]os.FileInfo, 0, len(ents))
	regular := map[string]os.FileInfo{}
	var names []string
	for _, de := range ents {
		fi, serr := os.Stat(filepath.Join(dir, de.Name())) // follows links; Name stays the link's
		switch {
		case serr == nil && fi.IsDir():
			out = append(out, fi)
		case serr == nil && fi.Mode().IsRegular():
			regular[de.Name()] = fi
			names = append(names, de.Name())
		case f.files.Candidate(de.Name()):
			f.skipped = append(f.skipped, de.Name())
		}
	}
	for _, n := range f.files.Select(names) {
		fi := regular[n]
		if tn := asTerraformName(n); tn != n {
			if f.real == nil {
				f.real = map[string]string{}
			}
			f.real[filepath.Join(dir, tn)] = filepath.Join(dir, n)
			fi = renamed{fi, tn}
		}
		out = append(out, fi)
	}
	return out, err
}

// renamed is a FileInfo listed under another name.
type renamed struct {
	os.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

// fixPositions puts the real file names (NAME.tofu, not the NAME.tf it
// was listed as) back into what terraform-config-inspect reports.
func (f *regularFS) fixPositions(cfg *tfconfig.Module, diags tfconfig.Diagnostics) {
	if len(f.real) == 0 {
		return
	}
	for i := range diags {
		if diags[i].Pos != nil {
			diags[i].Pos.Filename = f.path(diags[i].Pos.Filename)
		}
	}
	if cfg == nil {
		return
	}
	for i := range cfg.Diagnostics {
		if cfg.Diagnostics[i].Pos != nil {
			cfg.Diagnostics[i].Pos.Filename = f.path(cfg.Diagnostics[i].Pos.Filename)
		}
	}
	for _, v := range cfg.Variables {
		v.Pos.Filename = f.path(v.Pos.Filename)
	}
	for _, o := range cfg.Outputs {
		o.Pos.Filename = f.path(o.Pos.Filename)
	}
	for _, r := range cfg.ManagedResources {
		r.Pos.Filename = f.path(r.Pos.Filename)
	}
	for _, r := range cfg.DataResources {
		r.Pos.Filename = f.path(r.Pos.Filename)
	}
	for _, c := range cfg.ModuleCalls {
		c.Pos.Filename = f.path(c.Pos.Filename)
	}
}
