package modinstall

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/reflink"
)

// Dir is where terraform installs modules under TF_DATA_DIR; its
// manifest is Dir/modmanifest.Name.
const Dir = "modules"

// originName records, in a stored set, where its manifest's paths came
// from (the fetching unit's data dir and working dir), so that each
// unit's copy can be rebased onto its own.
const originName = ".tfisolate-origin.json"

// Snapshot is a fetched modules directory, copied out of the data dir
// that terraform get filled, into a directory no terraform writes.
type Snapshot struct {
	Dir     string `json:"-"`       // the copy: manifest and module dirs
	Origin  string `json:"origin"`  // the fetching unit's DATADIR/modules the manifest's Dirs point into
	Workdir string `json:"workdir"` // the fetching unit's working dir, against which relative Dirs resolve
}

// WriteOrigin records snap's Origin and Workdir in dir, a stored set, for
// ReadOrigin.
func WriteOrigin(dir string, snap Snapshot) error {
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, originName), b, 0o644)
}

// ReadOrigin returns the Snapshot of dir, a set holding WriteOrigin's
// record.
func ReadOrigin(dir string) (Snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, originName))
	if err != nil {
		return Snapshot{}, err
	}
	var snap Snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return Snapshot{}, err
	}
	snap.Dir = dir
	return snap, nil
}

// Installed is what Install did.
type Installed struct {
	// Copied: the snapshot was copied in.
	Copied bool
	// Older: the snapshot was not copied in, being older in these
	// modules (see Older).
	Older []string
	// Have is the data dir's own manifest when Older is set.
	Have []modmanifest.Record
}

// Install gives dataDir its own copy of snap, its manifest pointing into
// dataDir, unless dataDir already holds the same manifest, or, with
// neverOlder, unless snap holds an older version of a module dataDir has
// (see Older; calls are the component's module calls, for their version
// constraints): then dataDir keeps its own. The copy is built beside the
// target and renamed into place; leftovers of a crash in an earlier
// Install are removed first. The caller serializes writers of dataDir.
func Install(snap Snapshot, dataDir string, calls []modtree.Call, neverOlder bool) (Installed, error) {
	dst := filepath.Join(dataDir, Dir)
	raw, err := os.ReadFile(filepath.Join(snap.Dir, modmanifest.Name))
	if err != nil {
		return Installed{}, err
	}
	want, err := modmanifest.Rebase(raw, snap.Origin, snap.Workdir, dst)
	if err != nil {
		return Installed{}, err
	}
	if have, err := os.ReadFile(filepath.Join(dst, modmanifest.Name)); err == nil {
		if modmanifest.Same(have, want) {
			return Installed{}, nil
		}
		if neverOlder {
			// A manifest that does not parse says nothing to keep.
			haveRecs, herr := modmanifest.Parse(have)
			wantRecs, werr := modmanifest.Parse(want)
			if herr == nil && werr == nil {
				if older := Older(haveRecs, wantRecs, calls); len(older) > 0 {
					return Installed{Older: older, Have: haveRecs}, nil
				}
			}
		}
	}
	copied, err := replace(snap, dataDir, want)
	return Installed{Copied: copied}, err
}

// replace puts a copy of snap, with manifest want, in place of dataDir's
// modules.
func replace(snap Snapshot, dataDir string, want []byte) (bool, error) {
	dst := filepath.Join(dataDir, Dir)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return false, err
	}
	leftovers, _ := filepath.Glob(filepath.Join(dataDir, ".modules-*"))
	for _, l := range leftovers {
		if err := os.RemoveAll(l); err != nil {
			return false, err
		}
	}
	tmp, err := os.MkdirTemp(dataDir, ".modules-new-*")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp) // gone by rename on success
	if err := reflink.CopyTree(tmp, snap.Dir); err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(tmp, originName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	mf := filepath.Join(tmp, modmanifest.Name)
	if err := os.Remove(mf); err != nil {
		return false, err
	}
	if err := os.WriteFile(mf, want, 0o644); err != nil {
		return false, err
	}
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		old = filepath.Join(dataDir, ".modules-old-"+filepath.Base(tmp))
		if err := os.Rename(dst, old); err != nil {
			return false, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return false, err
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return false, err
		}
	}
	return true, nil
}
