package modtree

import (
	"slices"
	"strings"
)

// Files is an engine's rule for which files of a module directory are
// its configuration. It is the one place in the SDK that decides it:
// the walk, the backend and remote-state readers here, the workdir's
// layout and state places, and the runner's init record, backend
// fingerprint, provider discovery and Affected all take their files
// through it. The zero value is terraform's rule.
type Files int

const (
	// TerraformFiles is terraform's rule: *.tf and *.tf.json.
	TerraformFiles Files = iota
	// TofuFiles is OpenTofu's rule (1.8 and later): *.tf, *.tf.json,
	// *.tofu and *.tofu.json, where NAME.tofu hides NAME.tf and
	// NAME.tofu.json hides NAME.tf.json (each kind its own twin, as
	// OpenTofu's own loader pairs them; NAME.tofu.json does not hide
	// NAME.tf).
	TofuFiles
)

const (
	extTF       = ".tf"
	extTFJSON   = ".tf.json"
	extTofu     = ".tofu"
	extTofuJSON = ".tofu.json"
)

// String is "terraform" or "tofu", the engine whose rule f is.
func (f Files) String() string {
	if f == TofuFiles {
		return "tofu"
	}
	return "terraform"
}

// ignored reports names both engines skip whatever their extension:
// hidden files and editor leftovers (vim's NAME~, emacs's #NAME#).
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
}

// ext returns the configuration extension of name under f (".tf",
// ".tf.json", and for TofuFiles ".tofu" and ".tofu.json"), "" when f
// never reads a file so named.
func (f Files) ext(name string) string {
	if ignored(name) {
		return ""
	}
	exts := []string{extTFJSON, extTF}
	if f == TofuFiles {
		exts = append(exts, extTofuJSON, extTofu)
	}
	for _, e := range exts {
		if strings.HasSuffix(name, e) && len(name) > len(e) {
			return e
		}
	}
	return ""
}

// Candidate reports whether a file named name is configuration under f
// when nothing beside it hides it (see Select).
func (f Files) Candidate(name string) bool { return f.ext(name) != "" }

// Select returns, sorted, the names among names (the regular files of
// one directory) that an engine with rule f reads as configuration:
// candidates (see Candidate) not hidden by an OpenTofu twin. Names with
// a directory part are never selected.
func (f Files) Select(names []string) []string {
	have := map[string]bool{}
	for _, n := range names {
		if !strings.ContainsAny(n, `/\`) && f.Candidate(n) {
			have[n] = true
		}
	}
	out := make([]string, 0, len(have))
	for n := range have {
		if f == TofuFiles && have[tofuTwin(n)] {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// tofuTwin is the OpenTofu file that hides name (NAME.tofu for NAME.tf,
// NAME.tofu.json for NAME.tf.json), "" for any other name.
func tofuTwin(name string) string {
	switch {
	case strings.HasSuffix(name, extTFJSON):
		return strings.TrimSuffix(name, extTFJSON) + extTofuJSON
	case strings.HasSuffix(name, extTF):
		return strings.TrimSuffix(name, extTF) + extTofu
	}
	return ""
}

// asTerraformName is name as terraform would spell it: NAME.tofu as
// NAME.tf, NAME.tofu.json as NAME.tf.json, anything else unchanged.
// Since NAME.tofu hides NAME.tf, a selected set of names stays free of
// duplicates under it; that is how OpenTofu files are handed to readers
// that know only terraform's extensions (terraform-config-inspect).
func asTerraformName(name string) string {
	switch {
	case strings.HasSuffix(name, extTofuJSON):
		return strings.TrimSuffix(name, extTofuJSON) + extTFJSON
	case strings.HasSuffix(name, extTofu):
		return strings.TrimSuffix(name, extTofu) + extTF
	}
	return name
}

// IsJSON reports whether the configuration file name is in JSON syntax
// (*.tf.json, *.tofu.json) rather than native HCL (*.tf, *.tofu).
func IsJSON(name string) bool { return strings.HasSuffix(name, ".json") }

// isOverride reports whether a configuration file is an override file
// (override.tf, NAME_override.tf, and their .tf.json, .tofu and
// .tofu.json spellings), applied after the primary files.
func isOverride(name string) bool {
	base := name
	for _, e := range []string{extTofuJSON, extTFJSON, extTofu, extTF} {
		if strings.HasSuffix(name, e) {
			base = strings.TrimSuffix(name, e)
			break
		}
	}
	return base == "override" || strings.HasSuffix(base, "_override")
}
