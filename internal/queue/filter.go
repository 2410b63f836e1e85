package queue

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Filter selects units by ID with doublestar globs
// (github.com/bmatcuk/doublestar/v4): "*" and "?" never cross a "/", a
// "**" path segment crosses any number of them, "[...]" and "{a,b}" work
// as in the shell. A pattern matches the whole ID: "plat-ue2-dev/*"
// matches "plat-ue2-dev/vpc" but not "plat-ue2-dev/elasticache/redis-1"
// (use "plat-ue2-dev/**" for that), and "**/redis-cluster-3" matches
// "plat-ue2-dev/elasticache/redis-cluster-3" in every stack.
//
// A unit is selected when it matches at least one include pattern (or
// there are none) and no exclude pattern. The zero value selects every
// unit.
type Filter struct {
	include, exclude []pattern
}

// pattern is one glob, with the text the caller wrote for error messages.
type pattern struct {
	raw  string // as given, "!" included
	glob string
}

// Add adds patterns. A leading "!" turns an include pattern into an
// exclude one (and an exclude pattern, exclude true, into an include one).
// An empty pattern, "!" alone, or an invalid glob is refused with an error
// wrapping ErrBadPattern that names it, and then none of patterns is added.
func (f *Filter) Add(patterns []string, exclude bool) error {
	var inc, exc []pattern
	for _, raw := range patterns {
		glob, neg := strings.CutPrefix(raw, "!")
		if glob == "" {
			return fmt.Errorf("%w: %q is empty", ErrBadPattern, raw)
		}
		if !doublestar.ValidatePattern(glob) {
			return fmt.Errorf("%w: %q is not a valid glob", ErrBadPattern, raw)
		}
		if neg != exclude {
			exc = append(exc, pattern{raw: raw, glob: glob})
		} else {
			inc = append(inc, pattern{raw: raw, glob: glob})
		}
	}
	f.include = append(f.include, inc...)
	f.exclude = append(f.exclude, exc...)
	return nil
}

// matches reports whether p matches the whole of id.
func (p pattern) matches(id string) bool { return doublestar.MatchUnvalidated(p.glob, id) }

// match reports whether the filter selects id. A nil filter selects all.
func (f *Filter) match(id string) bool {
	if f == nil {
		return true
	}
	for _, p := range f.exclude {
		if p.matches(id) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if p.matches(id) {
			return true
		}
	}
	return false
}

// unmatched returns the first pattern, in the order added (includes before
// excludes), that matches none of ids.
func (f *Filter) unmatched(ids []string) (pattern, bool) {
	if f == nil {
		return pattern{}, false
	}
	for _, ps := range [][]pattern{f.include, f.exclude} {
	next:
		for _, p := range ps {
			for _, id := range ids {
				if p.matches(id) {
					continue next
				}
			}
			return p, true
		}
	}
	return pattern{}, false
}
