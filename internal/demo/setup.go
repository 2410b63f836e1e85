package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/tfbin"
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
	p, err := tfbin.Find(ctx, filepath.Join(root, "terraform"))
	if err != nil {
		return "", fmt.Errorf("terraform is not on PATH and could not be installed (%v): install Terraform 1.5 or newer from HashiCorp and put it on PATH", err)
	}
	return p, nil
}
