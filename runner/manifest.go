package runner

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// manifestRecord is the part of an entry of terraform's modules.json the
// runner reads. Dir is relative to the working dir, or absolute (it is
// absolute for installed modules when TF_DATA_DIR is).
type manifestRecord struct {
	Key, Source, Version, Dir string
}

// manifestFile keeps every field of modules.json, known or not, so that
// rewriting the Dirs changes nothing else.
type manifestFile struct {
	Modules []map[string]json.RawMessage `json:"Modules"`
}

func parseManifest(b []byte) ([]manifestRecord, error) {
	var m struct{ Modules []manifestRecord }
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", manifestName, err)
	}
	return m.Modules, nil
}

// rebaseManifest rewrites the Dir of every record that lies under origin
// (resolving relative Dirs against workdir) to the same place under dst.
// Installed modules are recorded with absolute paths into the leader's
// data dir; a unit's copy must point into its own.
func rebaseManifest(b []byte, origin, workdir, dst string) ([]byte, error) {
	var m manifestFile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", manifestName, err)
	}
	for _, rec := range m.Modules {
		var dir string
		if raw, ok := rec["Dir"]; ok {
			if err := json.Unmarshal(raw, &dir); err != nil {
				return nil, fmt.Errorf("parse %s: Dir: %w", manifestName, err)
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

// sameManifest reports whether two modules.json contents record the same
// modules in the same places, whatever their formatting and order.
func sameManifest(a, b []byte) bool {
	norm := func(x []byte) []manifestRecord {
		recs, err := parseManifest(x)
		if err != nil {
			return nil
		}
		for i := range recs {
			recs[i].Dir = path.Clean(recs[i].Dir)
		}
		slices.SortFunc(recs, func(p, q manifestRecord) int { return strings.Compare(p.Key, q.Key) })
		return recs
	}
	na, nb := norm(a), norm(b)
	return na != nil && reflect.DeepEqual(na, nb)
}
