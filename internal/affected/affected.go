package affected

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/earlyeval"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Unit is what Units reads of a unit.
type Unit struct {
	// ID names the unit in Units' result.
	ID string
	// Source is the component directory, as the caller gave it (relative
	// to the process's directory, not to base).
	Source string
	// VarFiles and BackendConfig are the unit's -var-file and
	// -backend-config values; only absolute file paths among them count.
	VarFiles      []string
	BackendConfig []string
	// ModuleSources are the caller's values of the root module's dynamic
	// module sources (workdir.Spec.ModuleSources); nil: Evaluate.
	ModuleSources map[string]string
	// Evaluate returns what the unit's values give its root module's
	// dynamic module sources when read by rule, and those it cannot
	// evaluate (see earlyeval.Inputs.ModuleSources); an error when the
	// source cannot be read. It is called only for a root module that
	// has dynamic sources; nil evaluates none.
	Evaluate func(rule modtree.Files) (values map[string]string, unknown []string, err error)
}

// rules are the configuration-file rules a unit is read by: there is no
// engine here, so a module either engine would read counts.
var rules = []modtree.Files{modtree.TerraformFiles, modtree.TofuFiles}

// Units returns the IDs of the units that a change to any of paths can
// affect, in the order given. A relative path is relative to base. The
// caller refuses empty paths and units without a Source.
func Units(units []Unit, base string, paths []string) []string {
	resolve := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		p = filepath.Clean(p)
		// A deleted file still affects its directory: resolve the
		// longest existing parent.
		rest := ""
		for {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Join(r, rest)
			}
			parent := filepath.Dir(p)
			if parent == p {
				return filepath.Join(p, rest)
			}
			rest = filepath.Join(filepath.Base(p), rest)
			p = parent
		}
	}
	changed := make([]string, len(paths))
	for i, p := range paths {
		changed[i] = resolve(p)
	}
	var out []string
	// What follows from a component's source is worked out once for all
	// its instances: the cost grows with distinct sources, not units.
	resolved := map[string]string{} // Source as given -> resolved
	bySource := map[string]bool{}   // resolved source (and dynamic sources' values) -> a changed path lies in its dirs
	dynamic := map[string]bool{}    // Source as given -> its root module has dynamic sources
	for i := range units {
		u := &units[i]
		src, ok := resolved[u.Source]
		if !ok {
			src = resolve(u.Source)
			resolved[u.Source] = src
		}
		// A component whose module sources are expressions reaches the
		// modules the unit's own variables select: keyed by their values.
		sources, unknown := dynamicSources(u, dynamic)
		key := src
		if sources != nil {
			b, _ := json.Marshal(sources)
			key += "\x00" + string(b)
		}
		// A source it cannot evaluate may select any module: every
		// change counts. That verdict is the unit's own, never cached: a
		// unit whose sources evaluate to the same values must neither
		// take it nor give it its own.
		hit, ok := len(changed) > 0, unknown
		if !ok {
			hit, ok = bySource[key]
		}
		if !ok {
			var dirs []string
			for _, rule := range rules {
				for _, d := range modtree.WalkWith(src, rule, sources[rule]).LocalDirs() {
					dirs = append(dirs, resolve(d))
				}
			}
			dirs = append(dirs, linkTargets(dirs)...)
			hit = slices.ContainsFunc(changed, func(c string) bool {
				return slices.ContainsFunc(dirs, func(d string) bool {
					return c == d || strings.HasPrefix(c, d+string(filepath.Separator))
				})
			})
			bySource[key] = hit
		}
		if !hit {
			for _, f := range u.VarFiles {
				if filepath.IsAbs(f) && slices.Contains(changed, resolve(f)) {
					hit = true
					break
				}
			}
		}
		if !hit {
			for _, f := range u.BackendConfig {
				if filepath.IsAbs(f) && (!strings.Contains(f, "=") || exists(f)) && slices.Contains(changed, resolve(f)) {
					hit = true
					break
				}
			}
		}
		if hit {
			out = append(out, u.ID)
		}
	}
	return out
}

// linkTargets returns what the symlinks inside dirs point at (resolved),
// files and directories alike, skipping what the workdir never copies
// (.terraform, .git, terraform.tfstate.d). A target is a path prefix for
// Units: a file matches itself, a directory everything under it.
func linkTargets(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() && p != d && (e.Name() == ".terraform" || e.Name() == ".git" || e.Name() == "terraform.tfstate.d") {
				return filepath.SkipDir
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if r, err := filepath.EvalSymlinks(p); err == nil {
					out = append(out, r)
				}
			}
			return nil
		})
	}
	return out
}

// dynamicSources returns the values of unit u's dynamic module sources
// under each rule (nil when it has none), and whether one could not be
// evaluated. dynamic caches, by source dir, whether there are any.
func dynamicSources(u *Unit, dynamic map[string]bool) (map[modtree.Files]map[string]string, bool) {
	if u.ModuleSources != nil {
		return map[modtree.Files]map[string]string{rules[0]: u.ModuleSources, rules[1]: u.ModuleSources}, false
	}
	has, ok := dynamic[u.Source]
	if !ok {
		for _, rule := range rules {
			has = has || earlyeval.HasDynamicSources(u.Source, rule)
		}
		dynamic[u.Source] = has
	}
	if !has {
		return nil, false
	}
	if u.Evaluate == nil {
		return nil, true
	}
	out := map[modtree.Files]map[string]string{}
	unknown := false
	for _, rule := range rules {
		vals, unk, err := u.Evaluate(rule)
		if err != nil {
			return nil, true
		}
		out[rule] = vals
		unknown = unknown || len(unk) > 0
	}
	return out, unknown
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
