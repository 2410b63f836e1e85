package pluginc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// meta is the install record of a package: what was verified when it was
// installed. It lives outside the package dir, so it never changes the h1:
// hash, and it is written before the package is renamed into place, so
// whoever sees the package sees its record.
type meta struct {
	Hashes []string     `json:"hashes"` // lock file hashes: h1: and the zh: of every platform when signed
	Zip    string       `json:"zip"`    // zh: of the zip it was unpacked from, verified against the source; empty when packed from an unpacked mirror
	Source string       `json:"source"`
	H1     string       `json:"h1,omitempty"`    // h1: of the unpacked files below
	Files  []fileRecord `json:"files,omitempty"` // every file of the package, sorted by path
}

// fileRecord is one installed file as it was verified.
type fileRecord struct {
	Path   string      `json:"path"` // slash-separated, relative to the package dir
	Size   int64       `json:"size"`
	Mode   fs.FileMode `json:"mode"`
	SHA256 string      `json:"sha256"`
	// Stamp changes whenever the file is written, replaced or chmodded
	// (inode, mtime, ctime where the platform has them), so comparing it
	// is the cheap check done on every use.
	Stamp fileStamp `json:"stamp"`
}

// h1 returns the package's h1: hash from the file records: dirhash's
// Hash1 over the same files, without reading them again.
func h1Of(files []fileRecord) (string, error) {
	recs := slices.Clone(files)
	slices.SortFunc(recs, func(a, b fileRecord) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range recs {
		if strings.Contains(f.Path, "\n") {
			return "", fmt.Errorf("%w: file name %q contains a newline", ErrBadPackage, f.Path)
		}
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// lockH1 returns the h1: among the lock hashes.
func (m *meta) lockH1() string {
	if m.H1 != "" {
		return m.H1
	}
	for _, h := range m.Hashes {
		if strings.HasPrefix(h, "h1:") {
			return h
		}
	}
	return ""
}

// scanDir lists the package's files with their size, mode and stamp (no
// content hash). Anything but regular files and directories is an error.
func scanDir(dir string) ([]fileRecord, error) {
	var out []fileRecord
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", filepath.ToSlash(rel))
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fileRecord{Path: filepath.ToSlash(rel), Size: fi.Size(), Mode: fi.Mode(), Stamp: stampOf(fi)})
		return nil
	})
	slices.SortFunc(out, func(a, b fileRecord) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

// recordDir scans dir and hashes every file: the full record of what is
// there now.
func recordDir(dir string) ([]fileRecord, error) {
	recs, err := scanDir(dir)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		sum, err := sha256Of(filepath.Join(dir, filepath.FromSlash(recs[i].Path)))
		if err != nil {
			return nil, err
		}
		recs[i].SHA256 = sum
	}
	return recs, nil
}

func sha256Of(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// quickCheck compares what is in dir now with the install record without
// reading any file: names, sizes, modes and stamps. It returns "" when
// everything matches, or what differs.
func quickCheck(dir string, m *meta) string {
	if len(m.Files) == 0 {
		return "its install record lists no files"
	}
	now, err := scanDir(dir)
	if err != nil {
		return err.Error()
	}
	if d := diffFiles(now, m.Files, false); d != "" {
		return d
	}
	for i := range now {
		if now[i].Stamp != m.Files[i].Stamp {
			return now[i].Path + " changed since it was installed"
		}
	}
	return ""
}

// diffFiles says how the files in now differ from the recorded ones by
// name, size, mode and (if hashes) content, or "" when they do not.
func diffFiles(now, rec []fileRecord, hashes bool) string {
	byPath := map[string]fileRecord{}
	for _, f := range now {
		byPath[f.Path] = f
	}
	for _, r := range rec {
		f, ok := byPath[r.Path]
		switch {
		case !ok:
			return r.Path + " is missing"
		case f.Size != r.Size:
			return fmt.Sprintf("%s has %d bytes, %d when installed", r.Path, f.Size, r.Size)
		case f.Mode != r.Mode:
			return fmt.Sprintf("%s has mode %s, %s when installed", r.Path, f.Mode, r.Mode)
		case hashes && f.SHA256 != r.SHA256:
			return fmt.Sprintf("%s has SHA-256 %s, %s when installed", r.Path, f.SHA256, r.SHA256)
		}
		delete(byPath, r.Path)
	}
	for _, f := range now {
		if _, extra := byPath[f.Path]; extra {
			return f.Path + " was not part of the package"
		}
	}
	return ""
}

// readMeta reads the install record at path.
func readMeta(path string) (*meta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("install record %s: %w", path, err)
	}
	if len(m.Hashes) == 0 || m.lockH1() == "" {
		return nil, fmt.Errorf("install record %s has no h1: hash", path)
	}
	return &m, nil
}
