package pluginc

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/cliconfig"
)

// SourcesFrom returns the cache's sources for a CLI config file's
// provider_installation
// block (nil: no file), method by method in order: network_mirror is NetworkMirror(url),
// filesystem_mirror is FilesystemMirror(path) (which reads Terraform's
// packed and unpacked layouts), direct is Registry(). A method's include
// and exclude patterns are honoured as Terraform honours them: the source
// offers only providers that some include pattern matches (all, without
// include) and no exclude pattern matches. Without a provider_installation
// block the result is Registry() alone; Terraform's implied local plugin
// directories (~/.terraform.d/plugins and the like) are not searched.
// dev_overrides are left to Terraform (an overridden provider is never
// installed).
//
// Errors name the file and the line: a block with no installation method
// (nothing could be installed), a network_mirror URL that is not https,
// a relative filesystem_mirror path (Terraform resolves it against each
// working directory, so it names no one place the cache could read), and
// OpenTofu's oci_mirror, which the cache cannot follow.
func SourcesFrom(f *cliconfig.File) ([]Source, error) {
	if f == nil {
		return []Source{Registry()}, nil
	}
	pi := f.ProviderInstallation
	if pi == nil {
		return []Source{Registry()}, nil
	}
	if len(pi.Methods) == 0 {
		return nil, &cliconfig.Error{Path: pi.Path, Line: pi.Line, Msg: "provider_installation has no installation method, so no provider could be installed"}
	}
	out := make([]Source, 0, len(pi.Methods))
	for _, m := range pi.Methods {
		bad := func(format string, args ...any) error {
			return &cliconfig.Error{Path: m.Path, Line: m.Line, Msg: m.Kind + ": " + fmt.Sprintf(format, args...)}
		}
		var s Source
		switch m.Kind {
		case "direct":
			s = Registry()
		case "network_mirror":
			u, err := url.Parse(m.Location)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return nil, bad("url %q is not an absolute https URL", m.Location)
			}
			s = NetworkMirror(m.Location)
		case "filesystem_mirror":
			if !filepath.IsAbs(m.Location) {
				return nil, bad("path %q is relative: Terraform resolves it against each working directory, so the cache cannot read it; give an absolute path", m.Location)
			}
			s = FilesystemMirror(m.Location)
		default:
			return nil, bad("the cache cannot install providers from an %s", m.Kind)
		}
		if len(m.Include)+len(m.Exclude) > 0 {
			fs := &filteredSource{src: s}
			for _, pat := range m.Include {
				pp, err := cliconfig.ParsePattern(pat, f.DefaultRegistryHost)
				if err != nil {
					return nil, bad("%v", err)
				}
				fs.include = append(fs.include, pp)
			}
			for _, pat := range m.Exclude {
				pp, err := cliconfig.ParsePattern(pat, f.DefaultRegistryHost)
				if err != nil {
					return nil, bad("%v", err)
				}
				fs.exclude = append(fs.exclude, pp)
			}
			fs.desc = describePatterns(m.Include, m.Exclude)
			s = fs
		}
		out = append(out, s)
	}
	return out, nil
}

// filteredSource offers only the providers a method's include and exclude
// patterns let through; exclusion wins, as in Terraform.
type filteredSource struct {
	src              Source
	include, exclude []cliconfig.Pattern
	desc             string
}

func (s *filteredSource) allows(p Provider) bool {
	for _, pp := range s.exclude {
		if pp.Matches(p.Hostname, p.Namespace, p.Type) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, pp := range s.include {
		if pp.Matches(p.Hostname, p.Namespace, p.Type) {
			return true
		}
	}
	return false
}

// describePatterns says what a method's patterns let through, for its
// source's name.
func describePatterns(include, exclude []string) string {
	var parts []string
	if len(include) > 0 {
		parts = append(parts, "include "+strings.Join(include, ", "))
	}
	if len(exclude) > 0 {
		parts = append(parts, "exclude "+strings.Join(exclude, ", "))
	}
	return strings.Join(parts, "; ")
}

// String names the source and its patterns.
func (s *filteredSource) String() string { return s.src.String() + " (" + s.desc + ")" }

// Versions lists the versions of p if the patterns let p through.
func (s *filteredSource) Versions(ctx context.Context, p Provider) ([]string, error) {
	if !s.allows(p) {
		return nil, nil
	}
	return s.src.Versions(ctx, p)
}

// Fetch fetches the package if the patterns let its provider through.
func (s *filteredSource) Fetch(ctx context.Context, id PackageID, dst *os.File) (Fetched, error) {
	if !s.allows(id.Provider) {
		return Fetched{}, fmt.Errorf("%w: %s does not offer %s", ErrNotFound, s, id.Provider)
	}
	return s.src.Fetch(ctx, id, dst)
}
