package modstore

import (
	"crypto/sha256"
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

// manifestVersion is the format of manifest.json; an entry with any other
// version is treated as damaged and refilled, never guessed at.
const manifestVersion = 1

// manifest is an entry's record of what was stored: the key it belongs to
// and every path of its tree. It lives in the entry dir beside the tree
// (never inside it, so a caller copying the tree copies exactly what fill
// wrote) and is written before the entry is renamed into place, so
// whoever sees an entry sees its manifest.
type manifest struct {
	Version int      `json:"version"`
	Key     string   `json:"key"`
	Files   []record `json:"files"` // sorted by Path
}

// record is one path of a tree: a directory, a regular file or a symlink.
type record struct {
	Path   string      `json:"path"` // slash-separated, relative to the tree
	Mode   fs.FileMode `json:"mode"` // type bits and permissions
	Size   int64       `json:"size,omitempty"`
	SHA256 string      `json:"sha256,omitempty"` // regular files
	Target string      `json:"target,omitempty"` // symlinks
	// Stamp changes whenever a regular file is written, replaced or
	// chmodded, so comparing it is how the cheap check notices a change
	// of content that kept the size.
	Stamp fileStamp `json:"stamp,omitzero"`
}

// scan records every path under dir with its type, mode, size, stamp and
// symlink target, and with hashes the SHA-256 of every regular file.
// Anything but directories, regular files and symlinks is an ErrBadTree.
func scan(dir string, hashes bool) ([]record, error) {
	var out []record
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r := record{Path: rel, Mode: fi.Mode()}
		switch {
		case fi.IsDir():
		case fi.Mode()&fs.ModeSymlink != 0:
			if r.Target, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			r.Size, r.Stamp = fi.Size(), stampOf(fi)
			if hashes {
				if r.SHA256, err = sha256Of(p); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrBadTree, rel, err)
				}
			}
		default:
			return fmt.Errorf("%w: %s is a %s, not a regular file, directory or symlink", ErrBadTree, rel, typeName(fi.Mode()))
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b record) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file (" + m.String() + ")"
	}
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

// diff says how the paths in now differ from the manifest's by presence,
// type, mode, size, symlink target and (if hashes) content, or returns ""
// when they do not. Stamps are not compared here: see stale.
func diff(now, rec []record, hashes bool) string {
	byPath := make(map[string]record, len(now))
	for _, r := range now {
		byPath[r.Path] = r
	}
	for _, r := range rec {
		n, ok := byPath[r.Path]
		switch {
		case !ok:
			return r.Path + " is missing"
		case n.Mode != r.Mode:
			return fmt.Sprintf("%s has mode %s, %s when stored", r.Path, n.Mode, r.Mode)
		case n.Size != r.Size:
			return fmt.Sprintf("%s has %d bytes, %d when stored", r.Path, n.Size, r.Size)
		case n.Target != r.Target:
			return fmt.Sprintf("%s points to %q, %q when stored", r.Path, n.Target, r.Target)
		case hashes && n.SHA256 != r.SHA256:
			return fmt.Sprintf("%s has SHA-256 %s, %s when stored", r.Path, n.SHA256, r.SHA256)
		}
		delete(byPath, r.Path)
	}
	for _, n := range now {
		if _, extra := byPath[n.Path]; extra {
			return n.Path + " was not part of the stored tree"
		}
	}
	return ""
}

// stale reports whether any regular file's stamp differs from the
// manifest's. Call it only when diff found nothing, so both lists hold the
// same paths in the same order.
func stale(now, rec []record) bool {
	for i := range now {
		if now[i].Stamp != rec[i].Stamp {
			return true
		}
	}
	return false
}

// readManifest reads and validates an entry's manifest.
func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("manifest %s has version %d, want %d", path, m.Version, manifestVersion)
	}
	for i, r := range m.Files {
		if r.Mode.IsRegular() && len(r.SHA256) != sha256.Size*2 {
			return nil, fmt.Errorf("manifest %s: %s has no SHA-256", path, r.Path)
		}
		if i > 0 && m.Files[i-1].Path >= r.Path {
			return nil, fmt.Errorf("manifest %s: paths are not sorted and unique at %s", path, r.Path)
		}
	}
	return &m, nil
}

// encode returns the manifest as written to disk.
func (m *manifest) encode() ([]byte, error) {
	return json.MarshalIndent(m, "", " ")
}
