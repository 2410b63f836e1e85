package workdir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	locksDir  = ".locks"     // under root: one lock + holder file per instance, never deleted
	tmpDir    = ".tmp"       // under root: per-instance scratch for cold builds and removals
	metaDir   = ".tfisolate" // under an instance home: stamp and data dir
	srcDir    = "src"        // under an instance home: the materialized source layout
	dataDir   = "data"       // under metaDir: TF_DATA_DIR
	stampFile = "stamp.json" // under metaDir: written last by every materialization
)

// Manager creates and refreshes instance workdirs under one root directory.
// It is safe for concurrent use, and several processes may share a root.
type Manager struct {
	root      string
	log       *slog.Logger
	lockRetry time.Duration
	hook      func(path string)
}

// Spec says which instance to prepare and from what.
type Spec struct {
	Stack    string            // "plat-ue2-dev"
	Instance string            // full instance path, "elasticache/redis-cluster-1"
	Source   string            // component root module dir
	Files    map[string][]byte // generated files, relative to the component dir: backend.tf.json, NAME.tfvars.json, ...
}

// Workdir is a prepared instance working directory. It holds the instance
// lock until Close.
//
// Dir can differ between two Prepares of one instance: when the component
// starts (or stops) calling a local module outside its own directory, the
// layout grows (or shrinks) and the component moves inside it, taking its
// instance-owned files along. Always run terraform in the Dir just returned.
type Workdir struct {
	ID       string // see ID
	Dir      string // where to run terraform: the component inside the materialized layout
	DataDir  string // TF_DATA_DIR, outside the files a refresh replaces
	Home     string // the instance's directory under the root
	LockFile string // the flock file; never deleted
	// LockWait is how long Prepare waited for another holder of the
	// instance lock (zero when the lock was free), not counting the time
	// spent refreshing files.
	LockWait time.Duration

	lock      *instanceLock
	closeOnce sync.Once
	closeErr  error
}

// New returns a Manager for root, creating root if needed.
func New(root string, opts ...Option) (*Manager, error) {
	if root == "" {
		return nil, invalid("root", root, "is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, invalid("root", root, "%v", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create workdir root: %w", err)
	}
	m := &Manager{root: abs, log: slog.New(slog.DiscardHandler), lockRetry: 50 * time.Millisecond}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Root returns the absolute root directory.
func (m *Manager) Root() string { return m.root }

// Home returns the directory an instance's workdir lives in, without
// touching the filesystem.
func (m *Manager) Home(stack, instance string) (string, error) {
	id, err := ID(stack, instance)
	if err != nil {
		return "", err
	}
	return filepath.Join(m.root, id), nil
}

// Prepare validates s, takes the instance's exclusive lock (waiting under
// ctx), and makes the instance's workdir match s.Source and s.Files. The
// returned Workdir holds the lock until Close. When s is invalid Prepare
// returns an error wrapping ErrInvalid and writes nothing; when the lock is
// not acquired before ctx ends it returns a *LockedError.
func (m *Manager) Prepare(ctx context.Context, s Spec) (*Workdir, error) {
	id, err := ID(s.Stack, s.Instance)
	if err != nil {
		return nil, fmt.Errorf("prepare workdir: %w", err)
	}
	src, err := checkSource(s.Source)
	if err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	if within(src, m.root) {
		// Materializing would write into the source tree (invariant 1) and
		// every build would copy the previous ones.
		return nil, fmt.Errorf("prepare workdir %s: %w", id, invalid("source", s.Source, "contains the workdir root %s", m.root))
	}
	files, err := checkFiles(s.Files)
	if err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	lk, err := m.lock(ctx, s.Stack, s.Instance, id)
	if err != nil {
		return nil, fmt.Errorf("prepare workdir %s: %w", id, err)
	}
	st, err := m.materialize(ctx, id, src, files)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prepare workdir %s: %w", id, err), lk.release())
	}
	home := filepath.Join(m.root, id)
	return &Workdir{
		ID:       id,
		Dir:      filepath.Join(home, srcDir, filepath.FromSlash(st.Component)),
		DataDir:  filepath.Join(home, metaDir, dataDir),
		Home:     home,
		LockFile: lk.path,
		LockWait: lk.waited,
		lock:     lk,
	}, nil
}

// Env returns the environment variables terraform needs to run in w: only
// TF_DATA_DIR, pointing at w.DataDir, so that .terraform (providers,
// modules, backend config, workspace choice) stays with the instance and
// survives refreshes. Callers add it on top of their own environment and
// run terraform with w.Dir as its working directory.
func (w *Workdir) Env() map[string]string {
	return map[string]string{"TF_DATA_DIR": w.DataDir}
}

// Close releases the instance lock. It is safe to call more than once.
func (w *Workdir) Close() error {
	w.closeOnce.Do(func() {
		if w.lock != nil {
			w.closeErr = w.lock.release()
		}
	})
	return w.closeErr
}

func checkSource(source string) (string, error) {
	if source == "" {
		return "", invalid("source", source, "is empty")
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return "", invalid("source", source, "%v", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", invalid("source", source, "does not exist")
	case err != nil:
		return "", invalid("source", source, "%v", err)
	case !fi.IsDir():
		return "", invalid("source", source, "is not a directory")
	}
	return abs, nil
}
