package modtree

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// Backend is what a root module's terraform block says about where its
// state lives, as far as local files are concerned.
type Backend struct {
	// Type is the backend's type label ("local", "s3", ...), "cloud" for a
	// cloud block, and "" when the module declares neither (terraform
	// then uses the local backend with its defaults).
	Type string
	// Path and WorkspaceDir are the local backend's "path" and
	// "workspace_dir" as written, "" when unset or not local.
	Path         string
	WorkspaceDir string
	// File is the file that declared the backend, "" when none did.
	File string
}

// Local reports whether state is kept in local files: the local backend,
// declared or implied.
func (b Backend) Local() bool { return b.Type == "" || b.Type == "local" }

// StatePath is where the default workspace's state lives, relative to the
// root module directory (or absolute), or "" when state is not local.
func (b Backend) StatePath() string {
	switch {
	case !b.Local():
		return ""
	case b.Path != "":
		return b.Path
	}
	return "terraform.tfstate"
}

// StateWorkspaceDir is the directory of the other workspaces' state,
// relative to the root module directory (or absolute), or "" when state
// is not local.
func (b Backend) StateWorkspaceDir() string {
	switch {
	case !b.Local():
		return ""
	case b.WorkspaceDir != "":
		return b.WorkspaceDir
	}
	return "terraform.tfstate.d"
}

var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}}
	tfSchema   = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
	}}
	localSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "path"}, {Name: "workspace_dir"}}}
)

// ReadBackend reads the backend (or cloud) block of the root module in
// dir. overlay holds files that replace or add to dir's own, by base name
// (the generated files a caller writes beside the module); names with a
// directory part are ignored. Files are taken the way the engine takes
// them (see Files and ReadConfig): hidden and editor backup files
// ignored, override files (override.tf, *_override.tf and their other
// spellings) applied last, each replacing the backend before it.
//
// It returns an error wrapping ErrBackend naming the file when two
// primary files declare a backend, or a local path is not a literal
// string (OpenTofu's early evaluation: a path built from a variable is
// not known here); settings given on the command line (-backend-config)
// are not seen.
func ReadBackend(dir string, overlay map[string][]byte, rule Files) (Backend, error) {
	files, err := ReadConfig(dir, overlay, rule)
	if err != nil {
		return Backend{}, fmt.Errorf("read backend of %s: %w", dir, err)
	}
	var out Backend
	for _, cf := range files {
		path := filepath.Join(dir, cf.Name)
		got, found, problem := fileBackend(path, cf.Data)
		if problem != "" {
			return Backend{}, fmt.Errorf("%w: %s%s", ErrBackend, path, problem)
		}
		if !found {
			continue // none, or a file that does not parse: none we could honour
		}
		if !cf.Override && out.File != "" {
			return Backend{}, fmt.Errorf("%w: %s and %s both declare a backend", ErrBackend, out.File, path)
		}
		out = got
	}
	return out, nil
}

// ConfigFile is one configuration file of a module directory.
type ConfigFile struct {
	Name     string // base name, as in the directory (or the overlay)
	Data     []byte
	Override bool // an override file: applied after every primary file
}

// ReadConfig reads the configuration files of the module in dir that an
// engine with the given rule reads (see Files.Select), with overlay's
// files (by base name; names with a directory part ignored) replacing or
// adding to them before the rule is applied. Only regular files are
// opened (links followed). The result lists the primary files sorted by
// name, then the override files sorted by name: the order the engine
// merges them in.
func ReadConfig(dir string, overlay map[string][]byte, rule Files) ([]ConfigFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range ents {
		n := de.Name()
		if !rule.Candidate(n) {
			continue
		}
		if _, ok := overlay[n]; ok {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			continue // a directory, FIFO or dangling link: not configuration the engine reads either
		}
		names = append(names, n)
	}
	for n := range overlay {
		if !strings.ContainsAny(n, `/\`) {
			names = append(names, n)
		}
	}
	var primary, override []ConfigFile
	for _, n := range rule.Select(names) {
		b, ok := overlay[n]
		if !ok {
			fh, err := OpenRegular(filepath.Join(dir, n))
			if err != nil {
				continue // replaced by something else since the listing
			}
			b, err = io.ReadAll(fh)
			fh.Close()
			if err != nil {
				return nil, err
			}
		}
		cf := ConfigFile{Name: n, Data: b, Override: isOverride(n)}
		if cf.Override {
			override = append(override, cf)
		} else {
			primary = append(primary, cf)
		}
	}
	return append(primary, override...), nil
}

// parseFile parses one configuration file, nil when it does not parse
// (terraform reports syntax errors far better).
func parseFile(p *hclparse.Parser, path string, b []byte) *hcl.File {
	var f *hcl.File
	var diags hcl.Diagnostics
	if IsJSON(path) {
		f, diags = p.ParseJSON(b, path)
	} else {
		f, diags = p.ParseHCL(b, path)
	}
	if f == nil || diags.HasErrors() {
		return nil
	}
	return f
}

// fileBackend returns the backend or cloud block the configuration file
// at path (content b) declares, if any, or the problem with it (see
// backendIn). A file is parsed once per process for its content: the
// same file under a hundred workdirs (or ReadBackend called several
// times for one Prepare) costs one parse (backends).
func fileBackend(path string, b []byte) (Backend, bool, string) {
	h := sha256.New()
	fmt.Fprintf(h, "backend-v1 %t %d\n", IsJSON(path), len(b))
	h.Write(b)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	r, ok := backends.get(key)
	if !ok {
		if f := parseFile(hclparse.NewParser(), path, b); f != nil {
			r.b, r.found, r.problem = backendIn(f)
		}
		backends.put(key, r)
	}
	if r.found {
		r.b.File = path
	}
	return r.b, r.found, r.problem
}

// backendResult is what fileBackend found in one file's content.
type backendResult struct {
	b       Backend // File unset: it is the path the content was read at
	found   bool
	problem string
}

// backends remembers fileBackend's results by content, bounded like
// parses (a memo of a pure function; never stale).
var backends = memo[backendResult]{}

// backendIn returns the backend or cloud block declared in f, if any, or
// the problem that makes it unusable, as the rest of a message that
// starts with the file's path.
func backendIn(f *hcl.File) (Backend, bool, string) {
	root, _, _ := f.Body.PartialContent(rootSchema)
	var out Backend
	found := false
	for _, tb := range root.Blocks {
		c, _, _ := tb.Body.PartialContent(tfSchema)
		for _, b := range c.Blocks {
			if found {
				return Backend{}, false, " declares more than one backend"
			}
			found = true
			out = Backend{Type: "cloud"}
			if b.Type != "backend" {
				continue
			}
			out.Type = b.Labels[0]
			if out.Type != "local" {
				continue
			}
			attrs, _, _ := b.Body.PartialContent(localSchema)
			for name, a := range attrs.Attributes {
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
					return Backend{}, false, fmt.Sprintf(": backend \"local\" %s is not a literal string", name)
				}
				if name == "path" {
					out.Path = v.AsString()
				} else {
					out.WorkspaceDir = v.AsString()
				}
			}
		}
	}
	return out, found, ""
}
