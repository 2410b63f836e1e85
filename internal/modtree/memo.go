package modtree

import (
	"crypto/sha256"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// parses remembers what terraform-config-inspect made of a module
// directory, keyed by what it read: the engine's rule and every
// configuration file's name and content (regularFS.snapshot). A Run over
// a hundred instances of one component, each walked in its own workdir,
// parses each distinct module once: the cost follows distinct sources,
// not instances. It can never serve a stale parse, since a changed file
// is a different key, so it is kept for the life of the process, bounded
// (memoMax modules). It is a memo of a pure
// function, not state any result depends on.
var parses memo[parsed]

// memoMax bounds each memo: all forgotten when full.
const memoMax = 4096

// memo is a bounded, concurrency-safe map from a content digest to what
// a pure function made of that content.
type memo[T any] struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]T
}

func (p *memo[T]) get(key [sha256.Size]byte) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[key]
	return r, ok
}

func (p *memo[T]) put(key [sha256.Size]byte, r T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= memoMax {
		p.m = map[[sha256.Size]byte]T{}
	}
	p.m[key] = r
}

// parsed is one parse, as made in dir.
type parsed struct {
	dir   string
	cfg   *tfconfig.Module
	diags tfconfig.Diagnostics
	err   error // terraform-config-inspect's panic, as inspect reports it
}

// at returns a copy of the parse as if made in dir: the module's Path and
// every position's file name moved from r.dir to dir. Each caller gets
// its own Module, variables, outputs, resources, calls and diagnostics;
// values below them (provider requirements, defaults) are shared and
// read only.
func (r parsed) at(dir string) (*tfconfig.Module, tfconfig.Diagnostics) {
	move := func(name string) string {
		if rest, ok := strings.CutPrefix(name, r.dir); ok && (rest == "" || rest[0] == os.PathSeparator) {
			return dir + rest
		}
		return name
	}
	diags := make(tfconfig.Diagnostics, len(r.diags))
	for i, d := range r.diags {
		if d.Pos != nil {
			pos := *d.Pos
			pos.Filename = move(pos.Filename)
			d.Pos = &pos
		}
		diags[i] = d
	}
	if r.cfg == nil {
		return nil, diags
	}
	c := *r.cfg
	if c.Path == r.dir {
		c.Path = dir
	}
	c.Diagnostics = diags
	c.Variables = moveAll(r.cfg.Variables, func(v tfconfig.Variable) *tfconfig.Variable { v.Pos.Filename = move(v.Pos.Filename); return &v })
	c.Outputs = moveAll(r.cfg.Outputs, func(v tfconfig.Output) *tfconfig.Output { v.Pos.Filename = move(v.Pos.Filename); return &v })
	c.ManagedResources = moveAll(r.cfg.ManagedResources, func(v tfconfig.Resource) *tfconfig.Resource { v.Pos.Filename = move(v.Pos.Filename); return &v })
	c.DataResources = moveAll(r.cfg.DataResources, func(v tfconfig.Resource) *tfconfig.Resource { v.Pos.Filename = move(v.Pos.Filename); return &v })
	c.ModuleCalls = moveAll(r.cfg.ModuleCalls, func(v tfconfig.ModuleCall) *tfconfig.ModuleCall { v.Pos.Filename = move(v.Pos.Filename); return &v })
	return &c, diags
}

// moveAll copies m, each value through f (which gets a copy of it).
func moveAll[T any](m map[string]*T, f func(T) *T) map[string]*T {
	if m == nil {
		return nil
	}
	out := make(map[string]*T, len(m))
	for k, v := range m {
		out[k] = f(*v)
	}
	return out
}
