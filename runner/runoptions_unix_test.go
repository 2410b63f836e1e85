//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// failingGenerate fails its unit once ready is closed (nil: at once).
func failingGenerate(ready <-chan struct{}) func(context.Context, map[string]Result) (map[string][]byte, error) {
	return func(ctx context.Context, _ map[string]Result) (map[string][]byte, error) {
		if ready != nil {
			select {
			case <-ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, errors.New("boom")
	}
}

// TestRunWithFailFast: WithFailFast given to one Run stops it at the
// first failure: the unit running beside the failed one is interrupted
// (Canceled, its cause naming the failure) and a unit that had not
// started yet never starts (Skipped with ErrFailFast), though it
// depends on neither. The Runner's next Run, without the option, runs
// everything (issue 18 item 1).
func TestRunWithFailFast(t *testing.T) {
	w := newWorld(t)
	gated := w.component(t, "gated", gatedComponent)
	plain := w.component(t, "plain", plainComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	started := g.started(t)
	units := []Unit{
		{ID: "s/a", Workdir: workdirSpec("s", "a", plain, nil), Generate: failingGenerate(started)},
		{ID: "s/b", Workdir: workdirSpec("s", "b", gated, files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "b.tfstate")))},
		{ID: "s/c", Workdir: workdirSpec("s", "c", plain, nil)},
	}
	r := w.runner(t, WithInterruptGrace(20*time.Second))
	rep, err := r.RunWith(testCtx(t), Apply, units, WithParallelism(2), WithFailFast())
	require.Error(t, err)
	st := statuses(rep)
	require.Equal(t, Failed, st["s/a"])
	b, _ := rep.Result("s/b")
	require.Equal(t, Canceled, b.Status, "%v", b.Err)
	require.ErrorIs(t, b.Err, ErrFailFast)
	c, _ := rep.Result("s/c")
	require.Equal(t, Skipped, c.Status)
	require.False(t, c.Started)
	require.ErrorIs(t, c.Err, ErrFailFast)

	// The choice was that Run's: the next one runs c after a fails.
	rep, err = r.RunWith(testCtx(t), Apply, []Unit{units[0], units[2]}, WithParallelism(1))
	require.Error(t, err)
	require.Equal(t, Succeeded, statuses(rep)["s/c"])
}

// TestRunWithIgnoreErrors: the dependent of a failed unit runs anyway
// and the failed unit stays Failed; without the option it is Skipped.
func TestRunWithIgnoreErrors(t *testing.T) {
	w := newWorld(t)
	plain := w.component(t, "plain", plainComponent)
	units := []Unit{
		{ID: "s/a", Workdir: workdirSpec("s", "a", plain, nil), Generate: failingGenerate(nil)},
		{ID: "s/b", Workdir: workdirSpec("s", "b", plain, nil), DependsOn: []string{"s/a"}},
	}
	r := w.runner(t)
	rep, err := r.RunWith(testCtx(t), Apply, units, WithIgnoreErrors())
	require.ErrorIs(t, err, ErrGenerate)
	require.Equal(t, map[string]Status{"s/a": Failed, "s/b": Succeeded}, statuses(rep))

	rep, err = r.Run(testCtx(t), Apply, units...)
	require.ErrorIs(t, err, ErrGenerate)
	require.Equal(t, map[string]Status{"s/a": Failed, "s/b": Skipped}, statuses(rep))
}

// TestIgnoreDependencyOrder: given to New, every unit is eligible at
// once: a dependency that can only finish once its dependent's terraform
// is running (a's Generate waits for b's provisioner) still succeeds.
func TestIgnoreDependencyOrder(t *testing.T) {
	w := newWorld(t)
	plain := w.component(t, "plain", plainComponent)
	gated := w.component(t, "gated", gatedComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	bStarted := g.started(t)
	units := []Unit{
		{ID: "s/a", Workdir: workdirSpec("s", "a", plain, nil),
			Generate: func(ctx context.Context, _ map[string]Result) (map[string][]byte, error) {
				select {
				case <-bStarted:
					return nil, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}},
		{ID: "s/b", Workdir: workdirSpec("s", "b", gated, files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "b.tfstate"))),
			DependsOn: []string{"s/a"}},
	}
	r := w.runner(t, WithIgnoreDependencyOrder(), WithParallelism(2))
	waves, err := r.Order(Apply, units...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"s/a", "s/b"}}, waves)
	waves, err = w.runner(t).Order(Apply, units...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"s/a"}, {"s/b"}}, waves, "the option, not the units, made one wave")
	done := runAsync(t, r, Apply, units...)
	waitFor(t, done, bStarted)
	g.release(t)
	o := waitDone(t, done, "the release")
	require.NoError(t, o.err)
	require.Equal(t, map[string]Status{"s/a": Succeeded, "s/b": Succeeded}, statuses(o.rep))
}

// TestWithOpenTofu: without WithTerraform, the first Run looks for tofu
// on PATH instead of terraform, and runs it.
func TestWithOpenTofu(t *testing.T) {
	tofu := testenv.Tofu(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(tofu, filepath.Join(bin, "tofu")))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	w := newWorld(t)
	src := w.component(t, "plain", plainComponent)
	r, err := New(WithWorkdirs(w.wd), WithOpenTofu())
	require.NoError(t, err)
	rep, err := r.Run(testCtx(t), Apply, Unit{ID: "s/tofu", Workdir: workdirSpec("s", "tofu", src, nil)})
	require.NoError(t, err)
	require.Equal(t, "tofu", rep.Engine.Kind)
	require.Equal(t, filepath.Join(bin, "tofu"), rep.Engine.Path)
	require.Equal(t, "ok", outputString(t, rep.Results[0], "o"))
}

type finderKey struct{}

// TestWithFinder: the finder runs under the first Run's context; a
// failure is ErrNoTerraform and tried again by the next Run; a success is
// kept, so later Runs do not ask again.
func TestWithFinder(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", plainComponent)
	u := Unit{ID: "s/found", Workdir: workdirSpec("s", "found", src, nil)}
	var calls atomic.Int32
	fail := errors.New("no engine here")
	r, err := New(WithWorkdirs(w.wd), WithFinder(func(ctx context.Context) (string, error) {
		require.Equal(t, "run ctx", ctx.Value(finderKey{}), "the finder gets the Run's context")
		if calls.Add(1) == 1 {
			return "", fail
		}
		return w.tf, nil
	}))
	require.NoError(t, err)
	ctx := context.WithValue(testCtx(t), finderKey{}, "run ctx")
	_, err = r.Run(ctx, Apply, u)
	require.ErrorIs(t, err, ErrNoTerraform)
	require.ErrorIs(t, err, fail)
	rep, err := r.Run(ctx, Apply, u)
	require.NoError(t, err)
	require.Equal(t, w.tf, rep.Engine.Path)
	_, err = r.Run(ctx, Apply, u)
	require.NoError(t, err)
	require.Equal(t, int32(2), calls.Load())
}

// TestRunWithOverridesNew: a Run's own filter replaces the Runner's
// default filter, which still applies to Run; a bad per-Run option is
// refused before anything runs.
func TestRunWithOverridesNew(t *testing.T) {
	w := newWorld(t)
	plain := w.component(t, "plain", plainComponent)
	units := []Unit{
		{ID: "a/one", Workdir: workdirSpec("a", "one", plain, nil)},
		{ID: "b/one", Workdir: workdirSpec("b", "one", plain, nil)},
	}
	r := w.runner(t, WithFilter("a/*"))
	waves, err := r.Order(Apply, units...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a/one"}}, waves)
	rep, err := r.RunWith(testCtx(t), Apply, units, WithFilter("b/*"))
	require.NoError(t, err)
	require.Equal(t, map[string]Status{"b/one": Succeeded}, statuses(rep))
	_, err = r.RunWith(testCtx(t), Apply, units, WithParallelism(0))
	require.ErrorIs(t, err, ErrBadOption)
	_, err = r.RunWith(testCtx(t), Apply, units, nil)
	require.ErrorIs(t, err, ErrBadOption)
}

// TestStopEndsOnlyItsRun: a zero Stop given to one Run and requested
// before it starts skips that Run's units (ErrStopped); the Runner's
// next Run is not stopped (issue 18 item 1, issue 17 item 11).
func TestStopEndsOnlyItsRun(t *testing.T) {
	w := newWorld(t)
	plain := w.component(t, "plain", plainComponent)
	units := []Unit{{ID: "s/one", Workdir: workdirSpec("s", "one", plain, nil)}}
	r := w.runner(t)
	var s Stop
	require.Equal(t, Drain, s.Request())
	rep, err := r.RunWith(testCtx(t), Apply, units, WithStop(&s))
	require.ErrorIs(t, err, ErrStopped)
	require.Equal(t, Skipped, rep.Results[0].Status)
	require.False(t, rep.Results[0].Started)
	rep, err = r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status)
}

// TestNeverStartedIsSkipped: when the Run's context ends, the unit that
// was running is Canceled and the one that never started is Skipped (not
// Canceled), its error wrapping ErrSkipped and the context's cause, in
// the report, its event and its JSON form (issue 17 item 12).
func TestNeverStartedIsSkipped(t *testing.T) {
	w := newWorld(t)
	gated := w.component(t, "gated", gatedComponent)
	plain := w.component(t, "plain", plainComponent)
	g := newGate(t, filepath.Join(w.dir, "gate"))
	started := g.started(t)
	units := []Unit{
		{ID: "s/a", Workdir: workdirSpec("s", "a", gated, files(t, map[string]any{"gate": g.dir}, filepath.Join(w.dir, "a.tfstate")))},
		{ID: "s/b", Workdir: workdirSpec("s", "b", plain, nil)},
	}
	rec := &recorder{}
	r := w.runner(t, WithInterruptGrace(20*time.Second))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	done := make(chan runOutcome, 1)
	go func() {
		rep, err := r.RunWith(ctx, Apply, units, WithParallelism(1), WithEvents(rec.add))
		done <- runOutcome{rep, err}
	}()
	waitFor(t, done, started)
	cancel()
	o := waitDone(t, done, "the cancel")
	require.ErrorIs(t, o.err, context.Canceled)
	a, _ := o.rep.Result("s/a")
	require.Equal(t, Canceled, a.Status, "%v", a.Err)
	require.True(t, a.Started)
	b, _ := o.rep.Result("s/b")
	require.Equal(t, Skipped, b.Status, "%v", b.Err)
	require.False(t, b.Started)
	require.ErrorIs(t, b.Err, ErrSkipped)
	require.ErrorIs(t, b.Err, context.Canceled)
	require.ErrorContains(t, o.err, "unit s/b:", "the report's error names the unit that never started")
	require.Equal(t, Skipped, rec.event("s/b", PhaseDone).Status)
	js, err := json.Marshal(b)
	require.NoError(t, err)
	require.Contains(t, string(js), `"status":"skipped"`)
	require.Contains(t, string(js), `"started":false`)
	require.Equal(t, []string{"s/b"}, o.rep.NotStarted())
}
