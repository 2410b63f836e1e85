package tfbin

import (
	"context"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// ErrNotFound is returned when terraform is neither on PATH nor installable.
// It is engine.ErrNotFound, so errors.Is works with either name.
var ErrNotFound = engine.ErrNotFound

// Version is the release installed when no terraform is on PATH
// (engine.TerraformRelease).
var Version = version.Must(version.NewVersion(engine.TerraformRelease))

// Find returns the absolute path of a terraform binary: it is
// engine.Find(ctx, engine.Terraform, installDir). New code should call
// engine.Find directly.
//
// Deprecated: use engine.Find with engine.Terraform.
func Find(ctx context.Context, installDir string) (string, error) {
	return engine.Find(ctx, engine.Terraform, installDir)
}
