package pluginc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
)

// selectVersion returns the newest of available that satisfies cs. The
// error lists what was available, so a user can fix the constraint.
func selectVersion(p Provider, available []*version.Version, cs constraints) (*version.Version, error) {
	var best *version.Version
	for _, v := range available {
		if cs.allows(v) && (best == nil || v.GreaterThan(best)) {
			best = v
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w for provider %s with constraints %q; available versions: %s",
			ErrNoMatchingVersion, p, cs.String(), listVersions(available))
	}
	return best, nil
}

// listVersions renders versions newest first for error messages.
func listVersions(vs []*version.Version) string {
	if len(vs) == 0 {
		return "none"
	}
	s := slices.Clone(vs)
	slices.SortFunc(s, func(a, b *version.Version) int { return b.Compare(a) })
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}

// parseVersion parses a provider version as Terraform accepts it in a
// lock file or a registry listing: a full semantic version.
func parseVersion(s string) (*version.Version, error) {
	v, err := version.NewSemver(s)
	if err != nil {
		return nil, err
	}
	if len(strings.Split(strings.SplitN(strings.SplitN(s, "-", 2)[0], "+", 2)[0], ".")) != 3 {
		return nil, fmt.Errorf("version %q must have three parts", s)
	}
	return v, nil
}
