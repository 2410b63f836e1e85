package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/pluginc"
)

const lockFileName = ".terraform.lock.hcl"

// discover returns the provider requirements of the module tree (the
// root module and the local modules it calls), merged per provider,
// sorted by address. Versions from an existing dependency lock file in
// the root are kept (Requirement.Locked), as terraform init would without
// -upgrade. A module that does not parse is an error naming it: the
// requirements of a partly read module cannot be trusted to be complete.
//
// When manifest names a modules.json (the unit's installed remote
// modules), every module it records is read too, so providers that only
// remote modules require also come from the shared cache and go into the
// lock file.
//
// Short provider addresses ("hashicorp/aws", "aws") resolve on host, the
// engine's default registry. With upgrade, locked versions are ignored,
// as terraform init -upgrade ignores them. Every module directory is read
// by rule, the engine's configuration files (the tree was walked by it).
func discover(tree *modtree.Tree, manifest, host string, upgrade bool, rule modtree.Files) ([]pluginc.Requirement, error) {
	dir := tree.Root
	merged := map[pluginc.Provider][]string{}
	add := func(t *modtree.Tree) error {
		if err := t.Err(); err != nil {
			return err
		}
		for _, d := range t.LocalDirs() {
			m := t.Modules[d]
			for name, r := range m.Config.RequiredProviders {
				src := r.Source
				if src == "" {
					src = name
				}
				if isBuiltIn(src) {
					continue
				}
				p, err := pluginc.ParseProvider(qualify(src, host))
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
	if manifest != "" {
		b, err := os.ReadFile(manifest)
		if err != nil {
			return nil, err
		}
		recs, err := modmanifest.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		for _, rec := range recs {
			if rec.Key == "" {
				continue // the root module
			}
			d := filepath.FromSlash(rec.Dir)
			if !filepath.IsAbs(d) {
				d = filepath.Join(dir, d)
			}
			if err := add(modtree.Walk(d, rule)); err != nil {
				return nil, fmt.Errorf("module %q (%s): %w", rec.Key, rec.Source, err)
			}
		}
	}
	locked := map[pluginc.Provider]pluginc.Lock{}
	switch b, err := os.ReadFile(filepath.Join(dir, lockFileName)); {
	case err == nil && !upgrade:
		locks, err := pluginc.ParseLockFile(b)
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %w", lockFileName, dir, err)
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

// requirementsKey identifies a requirement set: units with equal keys get
// the same packages and the same lock file, so one leader serves them all.
func requirementsKey(reqs []pluginc.Requirement) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s|%s|%s|%s\n", r.Provider, r.Constraints, r.Locked, strings.Join(r.LockedHashes, ","))
	}
	return b.String()
}
