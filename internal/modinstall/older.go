package modinstall

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Older returns the modules of have (a unit's installed set) that set
// holds in an older version, as "module.KEY SOURCE: HAVE, the set has
// SET", sorted. A module is compared only when both record a version
// (registry modules) under the same key and source, both versions parse,
// and the unit's version still satisfies the constraint of its call among
// calls (when the call is one of the component's own, whose constraint is
// known): a version the configuration no longer allows was not asked for,
// and replacing it is what terraform itself would do.
func Older(have, set []modmanifest.Record, calls []modtree.Call) []string {
	theirs := make(map[string]modmanifest.Record, len(set))
	for _, r := range set {
		theirs[r.Key] = r
	}
	constraints := map[string]string{}
	for _, c := range calls {
		constraints[c.Key] = c.Version
	}
	var out []string
	for _, h := range have {
		s, ok := theirs[h.Key]
		if !ok || h.Version == "" || s.Version == "" || s.Source != h.Source {
			continue
		}
		hv, err := version.NewVersion(h.Version)
		if err != nil {
			continue
		}
		sv, err := version.NewVersion(s.Version)
		if err != nil || !sv.LessThan(hv) {
			continue
		}
		if c := constraints[h.Key]; c != "" {
			cs, err := version.NewConstraint(c)
			if err != nil || !cs.Check(hv) {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s %s: %s, the set has %s", moduleName(h.Key), h.Source, h.Version, s.Version))
	}
	slices.Sort(out)
	return out
}

// moduleName is how a manifest key is named to a user: module.a.b.
func moduleName(key string) string {
	if key == "" {
		return "the root module"
	}
	return "module." + key
}

// SameCalls reports whether two manifests record the same module keys
// with the same sources: two answers to the same module calls, whatever
// versions they chose.
func SameCalls(a, b []modmanifest.Record) bool {
	calls := func(rs []modmanifest.Record) map[string]string {
		m := make(map[string]string, len(rs))
		for _, r := range rs {
			m[r.Key] = r.Source
		}
		return m
	}
	return maps.Equal(calls(a), calls(b))
}
