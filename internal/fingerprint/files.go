package fingerprint

import (
	"fmt"
	"slices"
	"strings"
)

// FilesShown is how many paths ChangedFiles names before it counts the
// rest ("and 3 more"): enough to see what an edit touched, few enough
// that a refactor of hundreds of files does not bury the error.
const FilesShown = 10

// ChangedFiles says which files differ between a record's files and
// now's, each a map from a path to a digest of the file (compared, never
// printed): `added "extra.tf"; modified "main.tf"; removed "old.tf"`,
// each kind's paths sorted and quoted, at most FilesShown paths in all,
// then "and N more". It is "" when none differs.
func ChangedFiles(saved, now map[string]string) string {
	var added, modified, removed []string
	for p, d := range now {
		was, ok := saved[p]
		switch {
		case !ok:
			added = append(added, p)
		case was != d:
			modified = append(modified, p)
		}
	}
	for p := range saved {
		if _, ok := now[p]; !ok {
			removed = append(removed, p)
		}
	}
	var out []string
	shown, total := 0, len(added)+len(modified)+len(removed)
	for _, kind := range []struct {
		name  string
		paths []string
	}{{"added", added}, {"modified", modified}, {"removed", removed}} {
		if len(kind.paths) == 0 || shown == FilesShown {
			continue
		}
		slices.Sort(kind.paths)
		kind.paths = kind.paths[:min(len(kind.paths), FilesShown-shown)]
		shown += len(kind.paths)
		quoted := make([]string, len(kind.paths))
		for i, p := range kind.paths {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		out = append(out, kind.name+" "+strings.Join(quoted, ", "))
	}
	s := strings.Join(out, "; ")
	if total > shown {
		s += fmt.Sprintf(" and %d more", total-shown)
	}
	return s
}
