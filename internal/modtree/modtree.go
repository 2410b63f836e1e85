package modtree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// IsLocal reports whether a module source names a local directory, by
// terraform's rule: it starts with "./" or "../". Everything else
// (registry addresses, git::, https://, s3::, an absolute path) is
// fetched by terraform init.
func IsLocal(source string) bool {
	return strings.HasPrefix(source, "./") || strings.HasPrefix(source, "../")
}

// Call is one module instance: a module block reached from the root
// through a chain of calls.
type Call struct {
	// Key is the instance's path: the call names from the root, joined
	// with "." ("a", "a.b"), as in terraform's modules.json.
	Key string
	// Name is the module block's label, the last element of Key.
	Name string
	// Source and Version are the block's source and version constraint
	// as written ("" when absent).
	Source  string
	Version string
	// Local is IsLocal(Source).
	Local bool
	// Dynamic is set when the source or version is an expression over
	// input variables, locals or path attributes (early evaluation:
	// OpenTofu 1.8, Terraform 1.15); Source or Version then holds the
	// expression's text as written (`var.src`, `"./mods/${var.flavor}"`),
	// the call is not Local and is not followed: what it names depends on
	// the values the engine is given. See DynamicExpr. A call of the root
	// module whose source WalkWith was given a value for holds that value
	// in Source (the text in SourceExpr) and is Local and followed when
	// the value is a local path.
	Dynamic bool
	// SourceExpr is the source's expression text when Source holds the
	// value a WalkWith caller evaluated it to; "" otherwise.
	SourceExpr string
	// Dir is set for local calls only: the calling module's Dir joined
	// with Source and cleaned lexically (as terraform does), symlinks
	// kept. Tree.Modules[Dir] describes it.
	Dir string
	// Parent is the Dir of the calling module.
	Parent string
	// Cycle is set on a local call whose directory is one of its own
	// callers (symlinks resolved); it is not followed.
	Cycle bool
}

// Module is one directory of the tree, parsed once.
type Module struct {
	// Dir is the directory as reached: the root, or a local call's Dir.
	Dir string
	// Resolved is Dir with symlinks resolved; "" when Dir is missing.
	Resolved string
	// Config is what terraform-config-inspect read (its RequiredProviders,
	// ModuleCalls, ...). It is nil only when Dir is missing; with parse
	// errors it holds whatever parsed.
	Config *tfconfig.Module
	// Err is nil, or wraps ErrParse (Config is partial) or ErrMissing
	// (Config is nil), or the error reading the directory.
	Err error
	// Skipped names the entries of Dir that are named like configuration
	// files but are not regular files (FIFOs, sockets, devices, dangling
	// links): they were never opened.
	Skipped []string
}

// Tree is the result of Walk.
type Tree struct {
	// Root is the absolute, cleaned root module directory.
	Root string
	// Calls is every module instance, sorted by Key. Remote calls are
	// listed but not followed; their Dir is "".
	Calls []Call
	// Modules holds the root and every local module directory by Dir.
	// Directories reached by different paths (symlinks) have one entry
	// per path, sharing one parse.
	Modules map[string]*Module

	cycles []error
}

// Walk reads the module tree rooted at root, each directory's files
// taken by the engine's rule (see Files). It never fails as a whole:
// problems are recorded on the modules and calls concerned and summed up
// by Tree.Err.
func Walk(root string, files Files) *Tree { return WalkWith(root, files, nil) }

// WalkWith is Walk with the values of the root module's dynamic sources:
// sources maps a module call of the root module (by name) whose source
// is an expression to the value the engine will evaluate it to (the
// caller evaluated it with the unit's variables). Such a call's Source is
// that value; a local one is followed like any local call. Dynamic calls
// of the root module that sources does not name, and every dynamic call
// of a child module, are listed and not followed, as in Walk.
func WalkWith(root string, files Files, sources map[string]string) *Tree {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = filepath.Clean(root)
	}
	w := &walker{
		t:       &Tree{Root: abs, Modules: map[string]*Module{}},
		parsed:  map[string]*Module{},
		files:   files,
		sources: sources,
	}
	w.visit(abs, "", nil)
	sort.Slice(w.t.Calls, func(i, j int) bool { return w.t.Calls[i].Key < w.t.Calls[j].Key })
	return w.t
}

type walker struct {
	t       *Tree
	parsed  map[string]*Module // by resolved path: each real directory is parsed once
	files   Files
	sources map[string]string // the root module's evaluated dynamic sources, by call name
}

// visit follows the calls of the module in dir; chain holds the resolved
// directories of its callers, to stop at cycles (a module calling itself,
// directly or through symlinks) where terraform would recurse forever.
func (w *walker) visit(dir, key string, chain []string) {
	mod := w.load(dir)
	if mod.Config == nil {
		return
	}
	chain = append(slices.Clip(chain), mod.Resolved)
	names := make([]string, 0, len(mod.Config.ModuleCalls))
	for n := range mod.Config.ModuleCalls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		mc := mod.Config.ModuleCalls[n]
		k := n
		if key != "" {
			k = key + "." + n
		}
		c := Call{Key: k, Name: n, Source: mc.Source, Version: mc.Version, Parent: dir,
			Dynamic: DynamicExpr(mc.Source) || DynamicExpr(mc.Version)}
		c.Local = !c.Dynamic && IsLocal(mc.Source)
		if v, ok := w.sources[n]; ok && key == "" && DynamicExpr(mc.Source) {
			c.SourceExpr, c.Source = mc.Source, v
			c.Local = IsLocal(v)
		}
		if c.Local {
			c.Dir = filepath.Join(dir, filepath.FromSlash(c.Source))
			if sub := w.load(c.Dir); sub.Resolved != "" && slices.Contains(chain, sub.Resolved) {
				c.Cycle = true
				w.t.cycles = append(w.t.cycles, fmt.Errorf("module %q (%s): %w", k, c.Dir, ErrCycle))
			}
		}
		w.t.Calls = append(w.t.Calls, c)
		if c.Local && !c.Cycle {
			w.visit(c.Dir, k, chain)
		}
	}
}

// load returns the Module for dir, parsing it the first time its real
// directory is seen.
func (w *walker) load(dir string) *Module {
	if m, ok := w.t.Modules[dir]; ok {
		return m
	}
	m := &Module{Dir: dir}
	w.t.Modules[dir] = m
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && !fi.IsDir():
		m.Err = fmt.Errorf("module %s: %w", dir, ErrMissing)
		return m
	case err != nil:
		m.Err = fmt.Errorf("module %s: %w", dir, err)
		return m
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		m.Err = fmt.Errorf("module %s: %w", dir, err)
		return m
	}
	m.Resolved = real
	if p, ok := w.parsed[real]; ok {
		m.Config, m.Err, m.Skipped = p.Config, p.Err, p.Skipped
		return m
	}
	fsys := &regularFS{files: w.files}
	key, memo := fsys.snapshot(dir)
	var cfg *tfconfig.Module
	var diags tfconfig.Diagnostics
	if r, ok := parses.get(key); memo && ok {
		cfg, diags = r.at(dir)
		err = r.err
	} else {
		cfg, diags, err = inspect(fsys, dir)
		fsys.fixPositions(cfg, diags)
		if memo {
			// Kept as a copy: callers own what they were handed.
			r := parsed{dir: dir, cfg: cfg, diags: diags, err: err}
			r.cfg, r.diags = r.at(dir)
			parses.put(key, r)
		}
	}
	m.Config, m.Skipped = cfg, fsys.skipped
	switch {
	case err != nil:
		m.Err = fmt.Errorf("module %s: %w: %w", dir, ErrParse, err)
	case diags.HasErrors():
		m.Err = fmt.Errorf("module %s: %w: %s", dir, ErrParse, describe(diags))
	}
	w.parsed[real] = m
	return m
}

// inspect runs terraform-config-inspect on dir. A panic in it (some
// inputs it does not expect make it panic) is the module's parse error,
// never the host's end.
func inspect(fsys tfconfig.FS, dir string) (cfg *tfconfig.Module, diags tfconfig.Diagnostics, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg, diags, err = nil, nil, fmt.Errorf("terraform-config-inspect failed reading it: %v", r)
		}
	}()
	cfg, diags = loadModule(fsys, dir)
	return cfg, diags, nil
}

// loadModule is terraform-config-inspect's parse; a test counts calls.
var loadModule = tfconfig.LoadModuleFromFilesystem

// Err joins every problem found: modules with parse errors, missing local
// module directories, and cycles. It is nil when the tree is clean.
func (t *Tree) Err() error {
	dirs := make([]string, 0, len(t.Modules))
	for d, m := range t.Modules {
		if m.Err != nil {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	errs := make([]error, 0, len(dirs)+len(t.cycles))
	for _, d := range dirs {
		errs = append(errs, t.Modules[d].Err)
	}
	errs = append(errs, t.cycles...)
	return errors.Join(errs...)
}

// LocalDirs returns, sorted and each once, the root and every local module
// directory that exists, as reached (see Call.Dir): what must be present,
// at the same relative positions, for terraform to resolve the local
// sources.
func (t *Tree) LocalDirs() []string {
	out := make([]string, 0, len(t.Modules))
	for d, m := range t.Modules {
		if m.Config != nil {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// describe lists the error diagnostics with their file and line, which
// tfconfig's own Error leaves out.
func describe(diags tfconfig.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity != tfconfig.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Pos != nil {
			msg = fmt.Sprintf("%s:%d: %s", d.Pos.Filename, d.Pos.Line, msg)
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}
