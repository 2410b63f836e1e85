package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Root resolves an example's -root flag: the flag's value made absolute,
// or, when empty, a directory for the example under the user cache dir.
func Root(flagValue, example string) (string, error) {
	if flagValue == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no -root given and no user cache dir: %w", err)
		}
		return filepath.Join(c, "tfisolate", "examples", example), nil
	}
	root, err := filepath.Abs(flagValue)
	if err != nil {
		return "", fmt.Errorf("-root %q: %w", flagValue, err)
	}
	return root, nil
}

// Terraform finds terraform on PATH or installs a pinned release under
// root; when neither works, the error says in one sentence how to get it.
func Terraform(ctx context.Context, root string) (string, error) {
	p, err := engine.Find(ctx, engine.Terraform, filepath.Join(root, "terraform"))
	if err != nil {
		return "", fmt.Errorf("terraform is not on PATH and could not be installed (%v): install Terraform 1.5 or newer from HashiCorp and put it on PATH", err)
	}
	return p, nil
}

// Offline is what an example needs to run on a machine with no network:
// terraform, the infra tree and the test provider served on loopback, the
// examples' stand-in for a real registry (see Provider.CacheOptions).
type Offline struct {
	// Root is the directory everything lives under.
	Root string
	// Terraform is the terraform executable.
	Terraform string
	// Infra is the root of the infra tree WriteInfra laid out.
	Infra string
	// Provider is the loopback registry serving the test provider.
	Provider *Provider
}

// SetupOffline finds terraform (see Terraform), writes the infra tree
// under root/infra and serves the provider (padded by padding bytes;
// built under root/provider on first use). Close the returned Offline
// when done.
func SetupOffline(ctx context.Context, root string, padding int64) (*Offline, error) {
	tf, err := Terraform(ctx, root)
	if err != nil {
		return nil, err
	}
	infra := filepath.Join(root, "infra")
	if _, err := WriteInfra(infra); err != nil {
		return nil, err
	}
	prov, err := ServeProvider(filepath.Join(root, "provider"), padding)
	if err != nil {
		return nil, fmt.Errorf("serve the provider locally: %w", err)
	}
	return &Offline{Root: root, Terraform: tf, Infra: infra, Provider: prov}, nil
}

// Source is the directory of a component of the infra tree, such as
// Component or VPCComponent.
func (o *Offline) Source(component string) string {
	return filepath.Join(o.Infra, filepath.FromSlash(component))
}

// Close stops the provider's registry.
func (o *Offline) Close() { o.Provider.Close() }
