package runner

import (
	"fmt"
	"path"
	"strings"
)

// filter selects units by ID with path.Match globs. A unit is selected when
// it matches at least one include pattern (or there are none) and no
// exclude pattern. Globs treat "/" as a separator, so "plat-ue2-dev/*"
// matches the instances of one stack but not deeper paths; use "*/*/*" or a
// more specific pattern to reach those.
type filter struct {
	include, exclude []string
}

func (f *filter) add(patterns []string, exclude bool) error {
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if p == "" {
			return fmt.Errorf("%w: empty filter pattern", ErrBadOption)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%w: filter pattern %q: %w", ErrBadOption, p, err)
		}
		if neg != exclude {
			f.exclude = append(f.exclude, p)
		} else {
			f.include = append(f.include, p)
		}
	}
	return nil
}

func (f *filter) match(id string) bool {
	for _, p := range f.exclude {
		if ok, _ := path.Match(p, id); ok {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}
