package cliconfig

import (
	"fmt"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"
	svchost "github.com/hashicorp/terraform-svchost"
)

// Pattern is an include or exclude pattern of an installation method:
// host (comparison form), namespace and type, each of which may be "*".
type Pattern struct{ Host, Namespace, Type string }

// ParsePattern parses a pattern as Terraform does: "HOST/NAMESPACE/TYPE"
// or "NAMESPACE/TYPE" (on defaultHost, Terraform's registry when empty);
// a wildcard host needs wildcard namespace and type, a wildcard namespace
// a wildcard type. A namespace may hold underscores, never leading or
// trailing, as Terraform 1.16 allows; the file is read by the widest
// rule of the engines that read it, and an engine that refuses such a
// namespace (OpenTofu, older Terraform) still says so itself.
func ParsePattern(s, defaultHost string) (Pattern, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Pattern{}, fmt.Errorf("provider pattern %q: want HOST/NAMESPACE/TYPE or NAMESPACE/TYPE", s)
	}
	var pp Pattern
	host := defaultHost
	if host == "" {
		host = tfaddr.DefaultProviderRegistryHost.String()
	}
	if len(parts) == 3 {
		host, parts = parts[0], parts[1:]
	}
	if host == "*" {
		pp.Host = "*"
	} else {
		h, err := svchost.ForComparison(host)
		if err != nil {
			return Pattern{}, fmt.Errorf("provider pattern %q: bad host name: %v", s, err)
		}
		pp.Host = h.String()
	}
	for i, part := range parts {
		if part != "*" {
			parse := tfaddr.ParseProviderPart
			if i == 0 {
				parse = tfaddr.ParseProviderNamespace
			}
			n, err := parse(part)
			if err != nil {
				return Pattern{}, fmt.Errorf("provider pattern %q: %q is neither * nor a valid name", s, part)
			}
			part = n
		}
		if i == 0 {
			pp.Namespace = part
		} else {
			pp.Type = part
		}
	}
	if pp.Host == "*" && (pp.Namespace != "*" || pp.Type != "*") {
		return Pattern{}, fmt.Errorf("provider pattern %q: a wildcard host needs a wildcard namespace and type", s)
	}
	if pp.Namespace == "*" && pp.Type != "*" {
		return Pattern{}, fmt.Errorf("provider pattern %q: a wildcard namespace needs a wildcard type", s)
	}
	return pp, nil
}

// Matches reports whether the provider hostname/namespace/typ (namespace
// and type in their normalized, lower-case form) is one the pattern
// names; the hostname is compared in its comparison form.
func (pp Pattern) Matches(hostname, namespace, typ string) bool {
	if pp.Host != "*" {
		h, err := svchost.ForComparison(hostname)
		if err != nil || h.String() != pp.Host {
			return false
		}
	}
	return (pp.Namespace == "*" || pp.Namespace == namespace) && (pp.Type == "*" || pp.Type == typ)
}
