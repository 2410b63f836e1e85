package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// createLog creates the log file at path, 0600, whatever was there: a
// fresh file is made with exclusive create in the log's dir (0700 when
// created) and renamed over path before anything is written, so a
// symlink or a file someone planted at the predictable name is replaced,
// never followed, truncated or written. A WithLogDir dir (given) must be
// owned by the effective user or root and writable by no one else, as
// must every dir above it unless sticky (invariant 12): the logs hold
// what terraform prints, secrets included when TF_LOG is set.
func createLog(path, given string) (*os.File, error) {
	dir := filepath.Dir(path)
	if given != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: WithLogDir(%q): %w", ErrBadOption, given, err)
		}
		for i := 0; i < 2; i++ { // before creating it, and as it is after
			u, err := pathtrust.Effective().CheckRoot(abs)
			if err != nil {
				return nil, fmt.Errorf("create log dir: %w", err)
			}
			if u != nil {
				return nil, fmt.Errorf("%w: WithLogDir(%q): the log dir is not private: %w; use a dir only you can write", ErrBadOption, given, u)
			}
			if i == 0 {
				if err := os.MkdirAll(abs, 0o700); err != nil {
					return nil, fmt.Errorf("create log dir: %w", err)
				}
			}
		}
	} else if err := atomicfile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create log %s: %w", path, err)
	}
	return f, nil
}
