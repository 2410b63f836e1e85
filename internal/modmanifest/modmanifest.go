package modmanifest

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Name is the manifest's file name in the modules directory terraform
// installs modules into (TF_DATA_DIR/modules).
const Name = "modules.json"

// Record is the part of an entry of the manifest the runner reads: the
// module call's key path ("" for the root module, "net.vpc" for a nested
// call), its source and version, and where it is installed. Dir is
// relative to the working dir, or absolute (it is absolute for installed
// modules when TF_DATA_DIR is).
type Record struct {
	Key, Source, Version, Dir string
}

// file keeps every field of the manifest, known or not, so that
// rewriting the Dirs changes nothing else.
type file struct {
	Modules []map[string]json.RawMessage `json:"Modules"`
}

// Parse reads the records of the manifest b.
func Parse(b []byte) ([]Record, error) {
	var m struct{ Modules []Record }
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", Name, err)
	}
	return m.Modules, nil
}

// Rebase rewrites the Dir of every record of the manifest b that lies
// under origin (resolving relative Dirs against workdir) to the same
// place under dst, and keeps everything else, unknown fields included.
// Installed modules are recorded with absolute paths into the data dir
// that installed them; a copy of that directory must point into its own.
func Rebase(b []byte, origin, workdir, dst string) ([]byte, error) {
	var m file
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", Name, err)
	}
	for _, rec := range m.Modules {
		var dir string
		if raw, ok := rec["Dir"]; ok {
			if err := json.Unmarshal(raw, &dir); err != nil {
				return nil, fmt.Errorf("parse %s: Dir: %w", Name, err)
			}
		}
		p := filepath.FromSlash(dir)
		if !filepath.IsAbs(p) {
			p = filepath.Join(workdir, p)
		}
		rel, err := filepath.Rel(origin, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue // a local module, the same relative path for every unit
		}
		nb, err := json.Marshal(filepath.ToSlash(filepath.Join(dst, rel)))
		if err != nil {
			return nil, err
		}
		rec["Dir"] = nb
	}
	return json.Marshal(m)
}

// Same reports whether two manifests record the same modules in the same
// places, whatever their formatting and order: Dirs are compared
// cleaned, records by Key. It is false when either does not parse or
// has no Modules list, so a broken manifest is never taken as matching.
func Same(a, b []byte) bool {
	norm := func(x []byte) []Record {
		recs, err := Parse(x)
		if err != nil {
			return nil
		}
		for i := range recs {
			recs[i].Dir = path.Clean(recs[i].Dir)
		}
		slices.SortFunc(recs, func(p, q Record) int { return strings.Compare(p.Key, q.Key) })
		return recs
	}
	na, nb := norm(a), norm(b)
	return na != nil && reflect.DeepEqual(na, nb)
}
