package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/tfbin"
)

// New returns a Runner that runs real terraform. WithWorkdirs is required.
// The terraform binary comes from WithTerraform, else from PATH, else a
// pinned release is installed under the user cache dir; when none can be
// had New fails with ErrNoTerraform.
func New(opts ...Option) (*Runner, error) {
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	if r.workdirs == nil {
		return nil, fmt.Errorf("%w: WithWorkdirs is required", ErrBadOption)
	}
	if r.tfPath == "" {
		dir := ""
		if c, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(c, "tfisolate", "terraform")
		}
		p, err := tfbin.Find(context.Background(), dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoTerraform, err)
		}
		r.tfPath = p
	} else {
		fi, err := os.Stat(r.tfPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoTerraform, r.tfPath, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is not a regular file", ErrNoTerraform, r.tfPath)
		}
	}
	return r, nil
}
