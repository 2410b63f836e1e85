package workdir

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Manager. Options are applied in order by New, which
// fails with an error naming the first option whose value is invalid.
type Option interface {
	apply(*config) error
}

// optionFunc adapts a function to Option; keeping config unexported keeps
// it out of godoc and lets it grow without breaking callers.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what options set; New copies it into the Manager.
type config struct {
	log       *slog.Logger
	lockRetry time.Duration
	hook      func(path string)
	adoptHook func()
	budget    budget
}

func defaultConfig() config {
	return config{log: slog.New(slog.DiscardHandler), lockRetry: 50 * time.Millisecond,
		budget: budget{bytes: DefaultBudgetBytes, files: DefaultBudgetFiles}}
}

// The default materialization budget of a Manager (see WithBudget): what
// one Prepare may copy from the source into one instance's workdir. It
// is sized to admit ordinary components with room to spare and to stop
// what no component means to carry: a module source that leaves the
// repository is refused by what it is (ErrOutsideRepository), so the
// budget only has to catch stray huge files and runaway trees.
// Measured: a Node lambda's installed node_modules (aws-sdk, the v3 S3
// and DynamoDB clients, typescript, jest, webpack, eslint, babel) holds
// 20,476 files and 243 MB, its largest file 24 MB; a Python lambda's
// vendored boto3, botocore and numpy 2,516 files and 110 MB.
const (
	// DefaultBudgetBytes is 1 GiB: the sum of the sizes of the files
	// copied from the source; four times the largest unzipped package
	// a lambda may have (250 MB), and less than one stray disk image.
	DefaultBudgetBytes int64 = 1 << 30
	// DefaultBudgetFiles is 100,000 files copied from the source: five
	// times a lambda's node_modules.
	DefaultBudgetFiles = 100_000
)

// budget is the most one Prepare copies from the source.
type budget struct {
	bytes int64
	files int
}

// WithBudget sets the materialization budget: the most one Prepare may
// copy from the source set (the component and the local modules it
// reaches) into one instance's workdir, as the sum of the files' sizes
// (apparent sizes: a sparse file counts its full length, although its
// holes stay holes in the copy) and as a number of files. Generated files
// (Spec.Files) do not count. A source set over either limit fails Prepare
// with an error wrapping ErrBudget that names the file where the limit
// was crossed, before anything of the instance is written: a stray
// multi-GiB file or a runaway tree is refused instead of being copied
// into every instance (a module source that leaves the repository is
// refused before the budget is counted: see Spec.Repository). Both must
// be positive; the defaults are DefaultBudgetBytes and
// DefaultBudgetFiles.
func WithBudget(maxBytes int64, maxFiles int) Option {
	return optionFunc(func(c *config) error {
		if maxBytes <= 0 || maxFiles <= 0 {
			return invalid("option", fmt.Sprintf("WithBudget(%d, %d)", maxBytes, maxFiles), "both limits must be positive")
		}
		c.budget = budget{bytes: maxBytes, files: maxFiles}
		return nil
	})
}

// WithLogger sends the manager's debug and info records to l. A nil l
// discards them, which is also the default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.log = l
		return nil
	})
}

// WithLockRetry sets how often a waiting Prepare or Remove retries the
// instance lock (default 50ms); d must be positive. flock has no portable
// blocking wait that honours a context, so waiting is polling.
func WithLockRetry(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalid("option", fmt.Sprintf("WithLockRetry(%s)", d), "the retry interval must be positive")
		}
		c.lockRetry = d
		return nil
	})
}

// withHook lets tests observe (and stall) materialization: it is called
// after each source file is written, with the path written.
func withHook(f func(path string)) Option {
	return optionFunc(func(c *config) error {
		c.hook = f
		return nil
	})
}

// withAdoptHook lets tests hold an adoption right before it takes the
// root's adoption lock, every check of the instance's own places done.
func withAdoptHook(f func()) Option {
	return optionFunc(func(c *config) error {
		c.adoptHook = f
		return nil
	})
}
