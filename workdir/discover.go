package workdir

import (
	"context"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// layout is where the source set lives and where the component sits in it.
type layout struct {
	base      string   // common ancestor of the component and its local modules
	component string   // slash path of the component relative to base ("." when equal)
	dirs      []string // slash paths relative to base to copy recursively; none inside another
	// missing lists local module dirs that were called but did not exist:
	// if one appears later, the layout may change although no file of the
	// source set did.
	missing []string
	// reads lists the state files the configuration reads through a local
	// terraform_remote_state (see modtree.RemoteStatePaths), as paths
	// relative to the component (where terraform runs) that stay inside
	// it; inputsOf turns them into the inputs of a build.
	reads []string
}

// discover follows local module calls from the component, recursively
// (modtree's walk: terraform's rule for local sources, paths as reached
// through symlinks), and returns the smallest layout that keeps every
// relative source resolvable; a root module call whose source is an
// expression is followed where sources gives its value (see
// Spec.ModuleSources). A local call whose directory lies outside repo
// is refused (an *OutsideRepositoryError): the one error here. Other
// problems in the tree are not: terraform reports them better, and the
// files still need to be in the workdir for it to do so.
func discover(ctx context.Context, log *slog.Logger, component string, rule modtree.Files, sources map[string]string, repo repository) (layout, error) {
	tr := modtree.WalkWith(component, rule, sources)
	if err := repo.outside(tr.Calls); err != nil {
		return layout{}, err
	}
	if err := tr.Err(); err != nil {
		log.DebugContext(ctx, "module tree has errors; following what parsed", "dir", component, "err", err)
	}
	all := tr.LocalDirs()
	if len(all) == 0 {
		all = []string{component} // unreadable component: still copy what is there
	}
	var missing []string
	for d, mod := range tr.Modules {
		if mod.Config == nil {
			missing = append(missing, d)
		}
	}
	sort.Strings(missing)
	base := commonAncestor(all)
	l := layout{base: base, missing: missing, reads: remoteStateReads(ctx, log, tr, rule)}
	comp, _ := filepath.Rel(base, component)
	l.component = filepath.ToSlash(comp)
	var kept []string
next:
	for _, p := range all {
		for _, k := range kept {
			if within(k, p) {
				continue next // sorted, so a parent always comes before its children
			}
		}
		kept = append(kept, p)
		r, _ := filepath.Rel(base, p)
		l.dirs = append(l.dirs, filepath.ToSlash(r))
	}
	return l, nil
}

// remoteStateReads returns the state files the modules of tr read through
// a local terraform_remote_state, relative to the root module (terraform
// resolves them against its working directory, whichever module reads
// them), keeping only those inside the root module's directory: a path
// outside it has no place in the workdir (an absolute path needs none).
func remoteStateReads(ctx context.Context, log *slog.Logger, tr *modtree.Tree, rule modtree.Files) []string {
	var out []string
	for _, d := range tr.LocalDirs() {
		paths, err := modtree.RemoteStatePaths(d, rule)
		if err != nil {
			log.DebugContext(ctx, "cannot read terraform_remote_state sources", "dir", d, "err", err)
			continue
		}
		for _, p := range paths {
			if filepath.IsAbs(p) || !filepath.IsLocal(p) {
				if !filepath.IsAbs(p) {
					log.InfoContext(ctx, "terraform_remote_state reads a local state outside the component; not copied", "dir", d, "path", p)
				}
				continue
			}
			out = append(out, filepath.ToSlash(filepath.Clean(p)))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// inputsOf returns the state files a build copies from the source as
// inputs: the component's remote-state reads (slash paths under the
// layout root) that are not where backends bs keep the instance's own
// state, which is never copied.
func inputsOf(reads []string, component string, bs ...modtree.Backend) map[string]bool {
	out := map[string]bool{}
	own := statePathsOf(component, bs...)
	ownDefault := func(rel string) bool {
		for _, b := range bs {
			def := path.Join(component, filepath.ToSlash(b.StatePath()))
			wsDir := path.Join(component, filepath.ToSlash(b.StateWorkspaceDir()))
			if b.Local() && (rel == def || rel == def+".backup" || withinSlash(wsDir, rel)) {
				return true
			}
		}
		return false
	}
	for _, r := range reads {
		rel := path.Join(component, r)
		if own.has(rel) || ownDefault(rel) {
			continue
		}
		out[rel] = true
	}
	return out
}

// stillMissing reports whether every directory a stamp recorded as missing
// is still missing.
func stillMissing(dirs []string) bool {
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return false
		}
	}
	return true
}

// within reports whether p is dir or inside it.
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// withinSlash is within for clean slash paths relative to one directory
// ("." is that directory).
func withinSlash(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// relSlash is p relative to dir, for clean slash paths with withinSlash(dir, p).
func relSlash(dir, p string) string {
	if dir == "." {
		return p
	}
	if p == dir {
		return "."
	}
	return strings.TrimPrefix(p, dir+"/")
}

func commonAncestor(paths []string) string {
	a := paths[0]
	for _, p := range paths[1:] {
		for !within(a, p) {
			parent := filepath.Dir(a)
			if parent == a {
				break
			}
			a = parent
		}
	}
	return a
}
