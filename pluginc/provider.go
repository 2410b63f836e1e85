package pluginc

import (
	"fmt"
	"strings"
	"unicode/utf8"

	svchost "github.com/hashicorp/terraform-svchost"

	tfaddr "github.com/hashicorp/terraform-registry-address"
)

// Provider is a fully qualified provider address, as in a lock file:
// hostname, namespace and type, all in their normalized (lower-case) form.
type Provider struct {
	Hostname  string
	Namespace string
	Type      string
}

// String returns HOST/NAMESPACE/TYPE, the form used in lock files.
func (p Provider) String() string { return p.Hostname + "/" + p.Namespace + "/" + p.Type }

// IsZero reports whether p is the zero Provider.
func (p Provider) IsZero() bool { return p == Provider{} }

func (p Provider) less(o Provider) bool {
	if p.Hostname != o.Hostname {
		return p.Hostname < o.Hostname
	}
	if p.Namespace != o.Namespace {
		return p.Namespace < o.Namespace
	}
	return p.Type < o.Type
}

// A Grammar is the set of provider source addresses an engine accepts,
// in required_providers as in its lock file and its mirrors: engines
// differ only in what a namespace may hold. The cache itself is
// engine-agnostic and accepts every address some engine accepts
// (ParseProvider); a caller that parses a configuration for one engine
// parses it by that engine's Grammar, so an address the engine refuses
// is refused before anything is installed. The zero Grammar is
// DashNamespaces.
type Grammar uint8

const (
	// DashNamespaces is the grammar of OpenTofu and of Terraform before
	// 1.16: a namespace, like a type, holds letters, digits and dashes,
	// never a leading or trailing dash.
	DashNamespaces Grammar = iota
	// UnderscoreNamespaces is Terraform 1.16's: a namespace may hold
	// underscores too ("my_org", a private registry's organization),
	// never a leading or trailing one; a type still may not. It accepts
	// every address DashNamespaces accepts, as the same Provider.
	UnderscoreNamespaces
)

// String names g, for errors and logs.
func (g Grammar) String() string {
	switch g {
	case DashNamespaces:
		return "dash namespaces"
	case UnderscoreNamespaces:
		return "underscore namespaces"
	}
	return fmt.Sprintf("Grammar(%d)", uint8(g))
}

// ParseProvider parses a provider source address by the widest grammar
// of the engines the SDK supports, UnderscoreNamespaces: it is what the
// cache accepts from any caller (a lock file, a mirror request, a
// report), whichever engine wrote it. A configuration meant for one
// engine is parsed by that engine's Grammar instead (Grammar.Parse).
func ParseProvider(s string) (Provider, error) { return UnderscoreNamespaces.Parse(s) }

// Parse parses a provider source address as written in
// required_providers, by grammar g: "TYPE", "NAMESPACE/TYPE" or
// "HOST/NAMESPACE/TYPE". Omitted parts default as in Terraform (the
// public registry host, the "hashicorp" namespace). Built-in and legacy
// providers are refused because they can never be installed, and so is
// an unknown Grammar. Every error wraps ErrInvalidProvider and names s.
func (g Grammar) Parse(s string) (Provider, error) {
	var namespace func(string) (string, error)
	switch g {
	case DashNamespaces:
		namespace = tfaddr.ParseProviderPart
	case UnderscoreNamespaces:
		namespace = tfaddr.ParseProviderNamespace
	default:
		return Provider{}, fmt.Errorf("%w %q: unknown address grammar %v", ErrInvalidProvider, s, g)
	}
	src := strings.TrimSpace(s)
	if !utf8.ValidString(src) {
		return Provider{}, fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidProvider, s)
	}
	if src != "" && !strings.Contains(src, "/") {
		// Terraform's implied provider for a bare type; going through the
		// two-part form also applies the parser's checks on the type.
		src = "hashicorp/" + src
	}
	// The source parser is Terraform 1.16's (underscore namespaces); the
	// part parsers below narrow it to g.
	a, err := tfaddr.ParseProviderSource(src)
	if err != nil {
		return Provider{}, fmt.Errorf("%w %q: %s", ErrInvalidProvider, s, oneLine(err.Error()))
	}
	// The source parser lets some malformed parts through (invalid UTF-8
	// among them); the part parsers are the strict ones, and a part must
	// be in its normalized form already.
	if n, err := namespace(a.Namespace); err != nil || n != a.Namespace {
		return Provider{}, fmt.Errorf("%w %q: bad namespace %q (%s)", ErrInvalidProvider, s, a.Namespace, namespaceRule(g, a.Namespace))
	}
	if n, err := tfaddr.ParseProviderPart(a.Type); err != nil || n != a.Type {
		return Provider{}, fmt.Errorf("%w %q: bad type %q (letters, digits and dashes only, never leading or trailing)", ErrInvalidProvider, s, a.Type)
	}
	if a.IsBuiltIn() || a.IsLegacy() {
		return Provider{}, fmt.Errorf("%w %q: built-in and legacy providers cannot be installed", ErrInvalidProvider, s)
	}
	host, err := displayHost(a.Hostname)
	if err != nil {
		return Provider{}, fmt.Errorf("%w %q: bad hostname: %v", ErrInvalidProvider, s, err)
	}
	return Provider{Hostname: host, Namespace: a.Namespace, Type: a.Type}, nil
}

// namespaceRule says what a namespace may hold under g, for the error
// that refuses ns; it says so when only a wider grammar would take ns.
func namespaceRule(g Grammar, ns string) string {
	if g == UnderscoreNamespaces {
		return "letters, digits, dashes and underscores only, never a leading or trailing dash or underscore"
	}
	rule := "letters, digits and dashes only, never a leading or trailing dash"
	if n, err := tfaddr.ParseProviderNamespace(ns); err == nil && n == ns {
		rule += "; Terraform 1.16 accepts underscores, this engine does not"
	}
	return rule
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// displayHost returns the display form of h. svchost panics on hostnames
// its own parser let through but cannot display, so that is checked first.
func displayHost(h svchost.Hostname) (host string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if _, err := svchost.ForComparison(h.String()); err != nil {
		return "", err
	}
	return h.ForDisplay(), nil
}
