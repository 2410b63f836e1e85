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

// ParseProvider parses a provider source address as written in
// required_providers: "TYPE", "NAMESPACE/TYPE" or "HOST/NAMESPACE/TYPE".
// Omitted parts default as in Terraform (the public registry host, the
// "hashicorp" namespace). Built-in and legacy providers are refused because
// they can never be installed.
func ParseProvider(s string) (Provider, error) {
	src := strings.TrimSpace(s)
	if !utf8.ValidString(src) {
		return Provider{}, fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidProvider, s)
	}
	if src != "" && !strings.Contains(src, "/") {
		// Terraform's implied provider for a bare type; going through the
		// two-part form also applies the parser's checks on the type.
		src = "hashicorp/" + src
	}
	a, err := tfaddr.ParseProviderSource(src)
	if err != nil {
		return Provider{}, fmt.Errorf("%w %q: %s", ErrInvalidProvider, s, oneLine(err.Error()))
	}
	for _, part := range []string{a.Namespace, a.Type} {
		// The source parser lets some malformed parts through (invalid
		// UTF-8 among them); the part parser is the strict one.
		if n, err := tfaddr.ParseProviderPart(part); err != nil || n != part {
			return Provider{}, fmt.Errorf("%w %q: bad name part %q", ErrInvalidProvider, s, part)
		}
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
