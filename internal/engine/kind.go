package engine

import (
	"fmt"
	"runtime"
	"strings"

	tofuaddr "github.com/opentofu/registry-address"

	tfaddr "github.com/hashicorp/terraform-registry-address"
)

// Kind names an engine: the program that runs root modules.
type Kind string

// The engines the SDK drives. The values are the executables' base names.
const (
	Terraform Kind = "terraform"
	OpenTofu  Kind = "tofu"
)

// ParseKind turns a user's spelling of an engine into a Kind: "terraform",
// or "tofu" / "opentofu" (any case, surrounding spaces ignored). Anything
// else is an error wrapping ErrUnknownKind that names the input.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "terraform":
		return Terraform, nil
	case "tofu", "opentofu":
		return OpenTofu, nil
	}
	return "", fmt.Errorf("engine %q: %w (want %q or %q)", s, ErrUnknownKind, Terraform, OpenTofu)
}

// String returns the Kind's value ("terraform", "tofu").
func (k Kind) String() string { return string(k) }

// Valid reports whether k is Terraform or OpenTofu.
func (k Kind) Valid() bool { return k == Terraform || k == OpenTofu }

// Product returns the engine's product name as its own output spells it
// ("Terraform", "OpenTofu"), or "" for an invalid Kind.
func (k Kind) Product() string {
	switch k {
	case Terraform:
		return "Terraform"
	case OpenTofu:
		return "OpenTofu"
	}
	return ""
}

// Executable returns the engine's executable file name on this OS
// ("terraform", "tofu", with ".exe" on Windows), or "" for an invalid Kind.
func (k Kind) Executable() string {
	if !k.Valid() {
		return ""
	}
	if runtime.GOOS == "windows" {
		return string(k) + ".exe"
	}
	return string(k)
}

// RegistryHost returns the registry host the engine assumes for a provider
// source address without one ("hashicorp/aws"), or "" for an invalid Kind.
// The two engines differ, so the same short address names two different
// providers, and lock-file entries and mirror paths written for one engine
// do not match the other's. The hosts come from each engine's own address
// library, never from a literal here.
func (k Kind) RegistryHost() string {
	switch k {
	case Terraform:
		return tfaddr.DefaultProviderRegistryHost.String()
	case OpenTofu:
		return tofuaddr.DefaultProviderRegistryHost.String()
	}
	return ""
}
