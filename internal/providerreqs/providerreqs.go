package providerreqs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
	tfaddr "github.com/hashicorp/terraform-registry-address"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/pluginc"
)

// LockFileName is the engine's dependency lock file, in the root module
// directory: Discover reads its pins there, and the runner writes the
// lock file the cache returns under the same name.
const LockFileName = ".terraform.lock.hcl"

// Unit is what Discover reads of a unit besides its module tree.
type Unit struct {
	// Manifest is the path of the unit's installed modules' record
	// (TF_DATA_DIR/modules/modules.json); "" when it has none.
	Manifest string
	// Host is the engine's default registry host, on which short
	// provider addresses resolve.
	Host string
	// Upgrade ignores the lock file's versions, as terraform init
	// -upgrade ignores them.
	Upgrade bool
	// Files is the engine's rule for configuration files; the tree must
	// have been walked by the same rule.
	Files modtree.Files
	// Grammar is the engine's provider address grammar (GrammarOf): a
	// source address it refuses is an error, as the engine refuses it.
	Grammar pluginc.Grammar
}

// Since when Terraform accepts underscores in a provider namespace
// (terraform-registry-address v0.5.0, "allow underscores in provider
// source address namespaces"). OpenTofu does not, up to its newest
// release.
var terraformUnderscoreSince = version.Must(version.NewVersion("1.16.0"))

// GrammarOf is the provider address grammar of engine e, decided here
// and nowhere else: Terraform 1.16 and later accept underscores in a
// namespace (pluginc.UnderscoreNamespaces); OpenTofu, older Terraform
// and an engine of unknown version do not (pluginc.DashNamespaces). A
// prerelease counts as its release, as in earlyeval.RulesOf.
func GrammarOf(e engine.Info) pluginc.Grammar {
	if e.Kind == engine.Terraform && e.Version != nil && e.Version.Core().GreaterThanOrEqual(terraformUnderscoreSince) {
		return pluginc.UnderscoreNamespaces
	}
	return pluginc.DashNamespaces
}

// Discover returns the provider requirements of tree (the root module
// and the local modules it calls) and of the modules u.Manifest records,
// merged per provider, sorted by address, with the versions and hashes
// the root's lock file pins unless u.Upgrade. A module that does not
// parse is an error naming it.
func Discover(tree *modtree.Tree, u Unit) ([]pluginc.Requirement, error) {
	dir := tree.Root
	merged := map[pluginc.Provider][]string{}
	add := func(t *modtree.Tree) error {
		if err := t.Err(); err != nil {
			return err
		}
		for _, d := range t.LocalDirs() {
			m := t.Modules[d]
			// By name: two local names of one provider add their
			// constraints in one order, so every instance of a component
			// gets the same Key (a map's order differs run to run).
			for _, name := range slices.Sorted(maps.Keys(m.Config.RequiredProviders)) {
				r := m.Config.RequiredProviders[name]
				src := r.Source
				if src == "" {
					src = name
				}
				if isBuiltIn(src) {
					continue
				}
				p, err := u.Grammar.Parse(qualify(src, u.Host))
				if err != nil {
					return fmt.Errorf("module %s, provider %q: %w", d, name, err)
				}
				cs, ok := merged[p]
				if !ok {
					cs = []string{}
				}
				for _, c := range r.VersionConstraints {
					if c = strings.TrimSpace(c); c != "" && !slices.Contains(cs, c) {
						cs = append(cs, c)
					}
				}
				merged[p] = cs
			}
		}
		return nil
	}
	if err := add(tree); err != nil {
		return nil, err
	}
	if u.Manifest != "" {
		b, err := os.ReadFile(u.Manifest)
		if err != nil {
			return nil, err
		}
		recs, err := modmanifest.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.Manifest, err)
		}
		for _, rec := range recs {
			if rec.Key == "" {
				continue // the root module
			}
			d := filepath.FromSlash(rec.Dir)
			if !filepath.IsAbs(d) {
				d = filepath.Join(dir, d)
			}
			if err := add(modtree.Walk(d, u.Files)); err != nil {
				return nil, fmt.Errorf("module %q (%s): %w", rec.Key, rec.Source, err)
			}
		}
	}
	locked := map[pluginc.Provider]pluginc.Lock{}
	switch b, err := os.ReadFile(filepath.Join(dir, LockFileName)); {
	case err == nil && !u.Upgrade:
		locks, err := pluginc.ParseLockFile(b)
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %w", LockFileName, dir, err)
		}
		for _, l := range locks {
			locked[l.Provider] = l
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	out := make([]pluginc.Requirement, 0, len(merged))
	for p, cs := range merged {
		l := locked[p]
		out = append(out, pluginc.Requirement{Provider: p, Constraints: strings.Join(cs, ", "), Locked: l.Version, LockedHashes: l.Hashes})
	}
	slices.SortFunc(out, func(a, b pluginc.Requirement) int { return strings.Compare(a.Provider.String(), b.Provider.String()) })
	return out, nil
}

// qualify puts host in front of a provider source that names none: the
// default registry of the engine that will install it.
func qualify(src, host string) string {
	switch strings.Count(src, "/") {
	case 0:
		return host + "/hashicorp/" + src
	case 1:
		return host + "/" + src
	}
	return src
}

// isBuiltIn reports terraform's built-in provider, implied by resources
// such as terraform_data; it is never installed.
func isBuiltIn(src string) bool {
	if src == "terraform" {
		return true
	}
	a, err := tfaddr.ParseProviderSource(src)
	return err == nil && a.IsBuiltIn()
}

// Key identifies a requirement set: units with equal keys get the same
// packages and the same lock file, so one leader serves them all. Every
// field of every Requirement is in it, in order, so a set that differs
// in a constraint, a locked version or a locked hash gets a leader of its
// own. Its bytes are pinned by TestKeyBytes.
func Key(reqs []pluginc.Requirement) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s|%s|%s|%s\n", r.Provider, r.Constraints, r.Locked, strings.Join(r.LockedHashes, ","))
	}
	return b.String()
}
