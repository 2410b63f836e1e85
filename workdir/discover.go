package workdir

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// layout is where the source set lives and where the component sits in it.
type layout struct {
	base      string   // common ancestor of the component and its local modules
	component string   // slash path of the component relative to base ("." when equal)
	dirs      []string // slash paths relative to base to copy recursively; none inside another
}

// isLocalSource mirrors Terraform's rule: only "./" and "../" prefixes mean
// a local directory; everything else is fetched by terraform init.
func isLocalSource(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

// discover follows local module calls from the component, recursively, and
// returns the smallest layout that keeps every relative source resolvable.
// Unparsable files are not an error here: terraform reports them better, and
// the files still need to be in the workdir for it to do so.
func discover(ctx context.Context, log *slog.Logger, component string) layout {
	seen := map[string]bool{component: true}
	queue := []string{component}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		mod, diags := tfconfig.LoadModule(d)
		if diags.HasErrors() {
			log.DebugContext(ctx, "module has errors; following the calls that parsed", "dir", d, "err", diags.Err())
		}
		if mod == nil {
			continue
		}
		names := make([]string, 0, len(mod.ModuleCalls))
		for n := range mod.ModuleCalls {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			src := mod.ModuleCalls[n].Source
			if !isLocalSource(src) {
				continue
			}
			p := filepath.Join(d, filepath.FromSlash(src))
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				log.DebugContext(ctx, "local module source not found; terraform will report it", "dir", d, "module", n, "source", src)
				continue
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	all := make([]string, 0, len(seen))
	for p := range seen {
		all = append(all, p)
	}
	sort.Strings(all)
	base := commonAncestor(all)
	l := layout{base: base}
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
	return l
}

// within reports whether p is dir or inside it.
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
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
