package pluginc

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// LockFile returns .terraform.lock.hcl content for pkgs, byte for byte as
// terraform init writes it: a header comment, one provider block per
// provider sorted by address, version, canonical constraints (when there
// are any) and the union of all hashes of that provider's packages, sorted
// (so h1: before zh:). Packages of several platforms of one provider merge
// into one block; they must share one version, and if they do not the
// newest version's packages win. Strings in Hashes that are not lock file
// hashes (see ParseLockFile) are left out: they could not be read back as
// written (HCL normalizes Unicode and replaces invalid UTF-8), and
// Terraform would refuse them.
func LockFile(pkgs []Package) []byte {
	type entry struct {
		p           Provider
		version     string
		constraints string
		hashes      []string
	}
	byProvider := map[Provider]*entry{}
	for _, pkg := range pkgs {
		e := byProvider[pkg.Provider]
		if e != nil && e.version != pkg.Version {
			if newer(pkg.Version, e.version) {
				e = nil // replace with the newer version
			} else {
				continue
			}
		}
		if e == nil {
			e = &entry{p: pkg.Provider, version: pkg.Version}
			byProvider[pkg.Provider] = e
		}
		if pkg.Constraints != "" {
			e.constraints = pkg.Constraints
		}
		for _, h := range pkg.Hashes {
			if validHash(h) {
				e.hashes = append(e.hashes, h)
			}
		}
	}
	entries := make([]*entry, 0, len(byProvider))
	for _, e := range byProvider {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *entry) int {
		switch {
		case a.p.less(b.p):
			return -1
		case b.p.less(a.p):
			return 1
		}
		return 0
	})

	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{
		{Type: hclsyntax.TokenComment, Bytes: []byte("# This file is maintained automatically by \"terraform init\".\n")},
		{Type: hclsyntax.TokenComment, Bytes: []byte("# Manual edits may be lost in future updates.\n")},
	})
	for _, e := range entries {
		body.AppendNewline()
		b := body.AppendNewBlock("provider", []string{e.p.String()}).Body()
		b.SetAttributeValue("version", cty.StringVal(e.version))
		if e.constraints != "" {
			b.SetAttributeValue("constraints", cty.StringVal(e.constraints))
		}
		if hs := sortedUnique(e.hashes); len(hs) > 0 {
			b.SetAttributeRaw("hashes", hashTokens(hs))
		}
	}
	return f.Bytes()
}

// hashTokens lays the hashes out one per line with trailing commas, the
// fixed layout Terraform uses so lock file diffs stay readable.
func hashTokens(hs []string) hclwrite.Tokens {
	toks := hclwrite.Tokens{
		{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")},
		{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")},
	}
	for _, h := range hs {
		toks = append(toks, hclwrite.TokensForValue(cty.StringVal(h))...)
		toks = append(toks,
			&hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")},
			&hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
}

// hashRE is the form of a lock file hash: a scheme (h1, zh, ...), a colon
// and a value in printable ASCII without spaces (base64 or hex in every
// hash Terraform writes).
var hashRE = regexp.MustCompile(`^[a-z0-9]+:[!-~]+$`)

func validHash(h string) bool { return hashRE.MatchString(h) }

func newer(a, b string) bool {
	va, err1 := parseVersion(a)
	vb, err2 := parseVersion(b)
	if err1 != nil || err2 != nil {
		return a > b
	}
	return va.GreaterThan(vb)
}

// Lock is one provider entry of a dependency lock file.
type Lock struct {
	Provider    Provider
	Version     string
	Constraints string
	Hashes      []string
}

// Requirement returns a Requirement that honours the lock: the same
// provider and constraints, pinned to the locked version and its hashes.
func (l Lock) Requirement() Requirement {
	return Requirement{Provider: l.Provider, Constraints: l.Constraints, Locked: l.Version, LockedHashes: l.Hashes}
}

type lockFileBody struct {
	Providers []struct {
		Address     string   `hcl:"address,label"`
		Version     string   `hcl:"version"`
		Constraints *string  `hcl:"constraints,optional"`
		Hashes      []string `hcl:"hashes,optional"`
	} `hcl:"provider,block"`
	Remain hcl.Body `hcl:",remain"`
}

// ParseLockFile parses .terraform.lock.hcl content. Errors wrap
// ErrInvalidLockFile and say what is wrong where. Every hash must be
// SCHEME:VALUE, the scheme lower-case letters and digits, the value
// printable ASCII without spaces.
func ParseLockFile(src []byte) ([]Lock, error) {
	f, diags := hclsyntax.ParseConfig(src, ".terraform.lock.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%w: %s", ErrInvalidLockFile, diags.Error())
	}
	var body lockFileBody
	if diags := gohcl.DecodeBody(f.Body, nil, &body); diags.HasErrors() {
		return nil, fmt.Errorf("%w: %s", ErrInvalidLockFile, diags.Error())
	}
	seen := map[Provider]bool{}
	var out []Lock
	for _, b := range body.Providers {
		p, err := ParseProvider(b.Address)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidLockFile, err)
		}
		if seen[p] {
			return nil, fmt.Errorf("%w: provider %s is locked twice", ErrInvalidLockFile, p)
		}
		seen[p] = true
		if _, err := parseVersion(b.Version); err != nil {
			return nil, fmt.Errorf("%w: provider %s: version %q: %v", ErrInvalidLockFile, p, b.Version, err)
		}
		for _, h := range b.Hashes {
			if !validHash(h) {
				return nil, fmt.Errorf("%w: provider %s: hash %q is not SCHEME:VALUE in printable ASCII", ErrInvalidLockFile, p, h)
			}
		}
		l := Lock{Provider: p, Version: b.Version, Hashes: b.Hashes}
		if b.Constraints != nil {
			cs, err := NormalizeConstraints(*b.Constraints)
			if err != nil {
				return nil, fmt.Errorf("%w: provider %s: %w", ErrInvalidLockFile, p, err)
			}
			l.Constraints = cs
		}
		out = append(out, l)
	}
	return out, nil
}
