package workdir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/reflink"
)

// tmpPrefix names every temp file the package creates inside a materialized
// tree, so leftovers of a killed process can be swept.
const tmpPrefix = ".tfisolate-tmp-"

// genFile is one validated generated file.
type genFile struct {
	name string // clean slash path relative to the component dir
	data []byte
}

// checkFiles validates generated-file names: each must stay inside the
// component dir and must not overwrite instance-owned data.
func checkFiles(files map[string][]byte) ([]genFile, error) {
	out := make([]genFile, 0, len(files))
	for name, data := range files {
		n := filepath.ToSlash(name)
		switch {
		case name == "":
			return nil, invalid("file", name, "is empty")
		case strings.ContainsRune(name, 0):
			return nil, invalid("file", name, "contains a NUL byte")
		case strings.ContainsRune(name, '\\') || !filepath.IsLocal(name) || !filepath.IsLocal(filepath.FromSlash(n)) || path.Clean(n) != n:
			return nil, invalid("file", name, "is not a clean relative path inside the workdir")
		}
		first, _, _ := strings.Cut(n, "/")
		if skipDir(first) || instanceOwned(path.Base(n)) || first == tmpPrefix || strings.HasPrefix(path.Base(n), tmpPrefix) {
			return nil, invalid("file", name, "would overwrite instance-owned data")
		}
		out = append(out, genFile{name: n, data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	// A file and a directory of the same name cannot both be generated.
	for i := 1; i < len(out); i++ {
		if strings.HasPrefix(out[i].name, out[i-1].name+"/") {
			return nil, invalid("file", out[i].name, "lies under generated file %q", out[i-1].name)
		}
	}
	return out, nil
}

// replaceFile atomically replaces dst with the content of r (a source file
// is cloned when it can be). It does not fsync: the caller syncs the
// filesystem once before writing the stamp.
func replaceFile(dst string, perm os.FileMode, fill func(*os.File) error) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), tmpPrefix+"*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return err
	}
	ok = true
	return nil
}

// copyFromSource replaces dst with the source file of e and returns the
// digest and size of what was actually written, read back from the copy:
// the source may change while it is copied, and the stamp must describe
// the workdir, not what the source held when it was hashed.
func copyFromSource(ctx context.Context, dst string, e entry, buf []byte) (sum [sha256.Size]byte, size int64, err error) {
	err = replaceFile(dst, e.perm, func(f *os.File) error {
		s, err := modtree.OpenRegular(e.abs)
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := reflink.Copy(f, s); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		sum, size, err = sumReader(ctx, f, buf)
		return err
	})
	return sum, size, err
}

// writeData writes a generated file: 0600, since a generated file is
// where a host puts what the component needs and the source has not
// (variables, backend settings), secrets included.
func writeData(dst string, data []byte) error {
	return replaceFile(dst, atomicfile.Record, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// sameFile reports whether dst already holds exactly e.
// buf is scratch space for hashing.
func sameFile(dst string, e entry, buf []byte) bool {
	fi, err := os.Lstat(dst)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.size || fi.Mode().Perm() != e.perm {
		return false
	}
	sum, _, err := fileSum(context.Background(), dst, buf)
	return err == nil && sum == e.sum
}

func sameData(dst string, data []byte) bool {
	fi, err := os.Lstat(dst)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) || fi.Mode().Perm() != atomicfile.Record {
		return false
	}
	b, err := os.ReadFile(dst)
	return err == nil && bytes.Equal(b, data)
}

// removeAndPrune removes the file at top/rel and then every parent
// directory up to (not including) top that became empty. A path whose
// way from top goes through a symlink is refused (errLink), never
// followed.
func removeAndPrune(top, rel string) error {
	p := filepath.Join(top, filepath.FromSlash(rel))
	if err := noLinkOnWay(top, p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	for d := filepath.Dir(p); d != top && within(top, d); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break // not empty: it holds something else, maybe instance data
		}
	}
	return nil
}

// sweepTemps removes temp files left in dir's tree by a killed process.
func sweepTemps(dir string) error {
	return filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if de.IsDir() && p != dir && skipDir(de.Name()) {
			return filepath.SkipDir
		}
		if !de.IsDir() && strings.HasPrefix(de.Name(), tmpPrefix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}
