package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// Runner runs terraform commands over units. A Runner is safe for
// concurrent use; each Run is independent.
type Runner struct {
	parallelism  int
	failFast     bool
	ignoreErrors bool
	ignoreOrder  bool
	filter       filter
	shardIndex   int
	shardCount   int
	events       func(Event)
	logger       *slog.Logger

	workdirs    *workdir.Manager
	cache       *pluginc.Cache
	tfPath      string
	lockTimeout time.Duration
	output      io.Writer
	logDir      string
	grace       time.Duration

	// exec replaces real execution in tests of the queue alone.
	exec execFunc
}

// newRunner applies options over the defaults without checking what a
// real run needs (terraform, workdirs), so the queue can be tested alone.
func newRunner(opts []Option) (*Runner, error) {
	r := &Runner{
		parallelism: DefaultParallelism,
		logger:      slog.New(slog.DiscardHandler),
		lockTimeout: DefaultLockTimeout,
		grace:       DefaultInterruptGrace,
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Run validates the units and runs cmd over the selected ones, in
// dependency order (reversed for Destroy), at most the configured
// parallelism at once. Invalid units or command: nothing runs, the report
// is nil and the error says why. Otherwise the report has one result per
// selected unit, and the error is report.Err(): non-nil when any unit failed
// or was canceled. Run returns only after every goroutine and terraform
// process it started has ended.
func (r *Runner) Run(ctx context.Context, cmd Command, units ...Unit) (*Report, error) {
	if err := cmd.valid(); err != nil {
		return nil, err
	}
	g, err := unitGraph(units)
	if err != nil {
		return nil, err
	}
	exec := r.exec
	if exec == nil {
		if r.workdirs == nil {
			return nil, fmt.Errorf("%w: runner has no workdir manager; create it with New", ErrBadOption)
		}
		rs, err := r.newRunState()
		if err != nil {
			return nil, err
		}
		defer func() {
			if cerr := rs.close(); cerr != nil {
				r.logger.Warn("cannot remove run dir", "dir", rs.tmp, "err", cerr)
			}
		}()
		exec = rs.runUnit
	}
	rep := &Report{Results: r.schedule(ctx, cmd, units, g, exec)}
	return rep, rep.Err()
}

// Plan is a dry run: it validates the units and returns the order cmd would
// run the selected ones in, as waves. Each wave holds sorted unit IDs that
// depend only on units of earlier waves; with WithIgnoreDependencyOrder
// everything is one wave. Nothing is executed and nothing is written.
func (r *Runner) Plan(cmd Command, units ...Unit) ([][]string, error) {
	if err := cmd.valid(); err != nil {
		return nil, err
	}
	g, err := unitGraph(units)
	if err != nil {
		return nil, err
	}
	return r.waves(g, cmd), nil
}
