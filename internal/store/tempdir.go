package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// StagingPrefix names the dirs LockedTempDir makes before they take
// their prefix: a sweep that finds one knows its process died between
// the two steps (or is in them right now), so it removes one only when it
// is old.
const StagingPrefix = "tfisolate-staging-"

// LockedTempDir makes a private dir in the temp dir, named prefix + a
// random suffix, whose lockName file it holds a flock on (Unlock the
// returned lock after removing the dir). The dir takes its name only
// once the lock is held: it is made as StagingPrefix + suffix, locked,
// then renamed. So a sweep of prefix dirs that removes those whose lock
// it can take (a dead process's) never meets a live one between the lock
// file's creation and its flock, a moment in which it would look dead.
func LockedTempDir(prefix, lockName string) (dir string, lock *flock.Flock, err error) {
	staging, err := os.MkdirTemp("", StagingPrefix)
	if err != nil {
		return "", nil, err
	}
	lk := flock.New(filepath.Join(staging, lockName))
	if err := lk.Lock(); err != nil {
		return "", nil, errors.Join(fmt.Errorf("lock %s: %w", staging, err), os.RemoveAll(staging))
	}
	dir = filepath.Join(filepath.Dir(staging), prefix+strings.TrimPrefix(filepath.Base(staging), StagingPrefix))
	if err := os.Rename(staging, dir); err != nil {
		return "", nil, errors.Join(fmt.Errorf("name %s: %w", staging, err), os.RemoveAll(staging), lk.Unlock())
	}
	return dir, lk, nil
}
