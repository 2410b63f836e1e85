package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mkUnits builds units from "id" or "id:dep1,dep2" specs.
func mkUnits(specs ...string) []Unit {
	us := make([]Unit, len(specs))
	for i, s := range specs {
		id, deps, _ := strings.Cut(s, ":")
		us[i].ID = id
		if deps != "" {
			us[i].DependsOn = strings.Split(deps, ",")
		}
	}
	return us
}

// fakeRunner returns a runner whose units run exec instead of terraform.
func fakeRunner(t *testing.T, exec execFunc, opts ...Option) *Runner {
	t.Helper()
	r, err := newRunner(opts)
	require.NoError(t, err)
	r.exec = exec
	return r
}

// recorder keeps every event in order. WithEvents serializes the calls;
// the mutex is for reading while a run is still going.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (rec *recorder) add(e Event) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.events = append(rec.events, e)
}

// index returns the position of the first event of unit in phase, or -1.
func (rec *recorder) index(unit string, p Phase) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, e := range rec.events {
		if e.Unit == unit && e.Phase == p {
			return i
		}
	}
	return -1
}

func (rec *recorder) event(unit string, p Phase) Event {
	i := rec.index(unit, p)
	if i < 0 {
		return Event{}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.events[i]
}

// peak is the highest number of units between their prepare and done
// events at any point.
func (rec *recorder) peak() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	cur, peak := 0, 0
	running := map[string]bool{}
	for _, e := range rec.events {
		switch {
		case e.Phase == PhasePrepare:
			running[e.Unit] = true
			cur++
		case e.Phase == PhaseDone && running[e.Unit]:
			cur--
		}
		peak = max(peak, cur)
	}
	return peak
}

func statuses(rep *Report) map[string]Status {
	m := map[string]Status{}
	for _, r := range rep.Results {
		m[r.Unit] = r.Status
	}
	return m
}

func testCtx(t *testing.T) context.Context {
	// A deadline only turns a scheduler bug (a barrier that never fills)
	// into a failure instead of a hung test; nothing waits for it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// barrier lets units through in groups of n: the n-th arrival opens the
// gate for its group. It can only open if n units genuinely run at once.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	gates   map[int]chan struct{}
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	group := b.arrived / b.n
	b.arrived++
	if b.gates == nil {
		b.gates = map[int]chan struct{}{}
	}
	g, ok := b.gates[group]
	if !ok {
		g = make(chan struct{})
		b.gates[group] = g
	}
	if b.arrived%b.n == 0 {
		close(g)
	}
	b.mu.Unlock()
	select {
	case <-g:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("barrier group %d never filled: %w", group, ctx.Err())
	}
}

func TestPeakConcurrencyEqualsParallelism(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var specs []string
			for i := range 3 * n {
				specs = append(specs, fmt.Sprintf("u%02d", i))
			}
			b := &barrier{n: n}
			rec := &recorder{}
			r := fakeRunner(t, func(ctx context.Context, j *job) error { return b.wait(ctx) },
				WithParallelism(n), WithEvents(rec.add))
			rep, err := r.Run(testCtx(t), Apply, mkUnits(specs...)...)
			require.NoError(t, err)
			require.Len(t, rep.Results, 3*n)
			require.Equal(t, n, rec.peak(), "peak concurrency from events")
		})
	}
}

func TestDefaultParallelism(t *testing.T) {
	var specs []string
	for i := range 2 * DefaultParallelism {
		specs = append(specs, fmt.Sprintf("u%02d", i))
	}
	b := &barrier{n: DefaultParallelism}
	rec := &recorder{}
	r := fakeRunner(t, func(ctx context.Context, j *job) error { return b.wait(ctx) }, WithEvents(rec.add))
	_, err := r.Run(testCtx(t), Apply, mkUnits(specs...)...)
	require.NoError(t, err)
	require.Equal(t, DefaultParallelism, rec.peak())
}

// TestOrder holds every unit until the test has checked, at the moment it
// starts, that everything it must wait for is done; a scheduler that
// started units early would be caught at that moment.
func TestOrder(t *testing.T) {
	specs := []string{"a", "b:a", "c:a", "d:b,c", "e", "f:e,d"}
	deps := map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "f": {"e", "d"}}
	for _, cmd := range []Command{Apply, Destroy} {
		t.Run(cmd.String(), func(t *testing.T) {
			// mustFinishFirst[x] = units whose done must precede x's start.
			mustFinishFirst := map[string][]string{}
			for u, ds := range deps {
				for _, d := range ds {
					if cmd == Destroy {
						mustFinishFirst[d] = append(mustFinishFirst[d], u)
					} else {
						mustFinishFirst[u] = append(mustFinishFirst[u], d)
					}
				}
			}
			rec := &recorder{}
			started := make(chan string)
			var mu sync.Mutex
			release := map[string]chan struct{}{}
			gate := func(id string) chan struct{} {
				mu.Lock()
				defer mu.Unlock()
				if release[id] == nil {
					release[id] = make(chan struct{})
				}
				return release[id]
			}
			events := func(e Event) {
				rec.add(e)
				if e.Phase == PhasePrepare {
					started <- e.Unit
				}
			}
			r := fakeRunner(t, func(ctx context.Context, j *job) error {
				select {
				case <-gate(j.res.Unit):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, WithParallelism(10), WithEvents(events))

			var rep *Report
			var err error
			runDone := make(chan struct{})
			go func() {
				defer close(runDone)
				rep, err = r.Run(testCtx(t), cmd, mkUnits(specs...)...)
			}()
			for range specs {
				id := <-started
				for _, d := range mustFinishFirst[id] {
					require.GreaterOrEqual(t, rec.index(d, PhaseDone), 0, "%s started before %s was done", id, d)
				}
				close(gate(id))
			}
			<-runDone
			require.NoError(t, err)
			for u, firsts := range mustFinishFirst {
				for _, d := range firsts {
					require.Less(t, rec.index(d, PhaseDone), rec.index(u, PhasePrepare), "%s must end before %s starts", d, u)
					require.False(t, rec.event(d, PhaseDone).Time.After(rec.event(u, PhasePrepare).Time))
				}
			}
			for _, res := range rep.Results {
				require.Equal(t, Succeeded, res.Status, res.Unit)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestFailureSkipsDependentsOnly(t *testing.T) {
	rec := &recorder{}
	r := fakeRunner(t, func(ctx context.Context, j *job) error {
		if j.res.Unit == "a" {
			return errBoom
		}
		return nil
	}, WithEvents(rec.add))
	rep, err := r.Run(testCtx(t), Apply, mkUnits("a", "b:a", "c", "d:b", "e:c")...)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, map[string]Status{"a": Failed, "b": Skipped, "c": Succeeded, "d": Skipped, "e": Succeeded}, statuses(rep))
	for _, id := range []string{"b", "d"} {
		res, _ := rep.Result(id)
		require.ErrorIs(t, res.Err, ErrSkipped)
		require.ErrorIs(t, res.Err, ErrDependencyFailed)
		require.Contains(t, res.Err.Error(), "a did not succeed", "reason names the failed unit")
		require.Equal(t, -1, rec.index(id, PhasePrepare), "skipped unit %s must not start", id)
		require.Equal(t, Skipped, rec.event(id, PhaseDone).Status)
	}
	// Report.Err names the failed unit only.
	require.Contains(t, rep.Err().Error(), "unit a: boom")
	require.NotContains(t, rep.Err().Error(), "unit b")
}

func TestFailFast(t *testing.T) {
	bStarted := make(chan struct{})
	r := fakeRunner(t, func(ctx context.Context, j *job) error {
		switch j.res.Unit {
		case "a":
			<-bStarted // make sure b is running when a fails
			return errBoom
		case "b":
			close(bStarted)
			<-ctx.Done() // b only ends by being interrupted
			return ctx.Err()
		}
		return nil
	}, WithParallelism(2), WithFailFast())
	rep, err := r.Run(testCtx(t), Apply, mkUnits("a", "b", "c", "d")...)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, map[string]Status{"a": Failed, "b": Canceled, "c": Skipped, "d": Skipped}, statuses(rep))
	b, _ := rep.Result("b")
	require.ErrorIs(t, b.Err, context.Canceled)
	require.ErrorIs(t, b.Err, ErrFailFast)
	require.Contains(t, b.Err.Error(), "a failed")
	for _, id := range []string{"c", "d"} {
		res, _ := rep.Result(id)
		require.ErrorIs(t, res.Err, ErrFailFast)
		require.ErrorIs(t, res.Err, ErrSkipped)
	}
}

func TestIgnoreErrors(t *testing.T) {
	r := fakeRunner(t, func(ctx context.Context, j *job) error {
		if j.res.Unit == "a" {
			return errBoom
		}
		return nil
	}, WithIgnoreErrors())
	rep, err := r.Run(testCtx(t), Apply, mkUnits("a", "b:a", "c:b")...)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, map[string]Status{"a": Failed, "b": Succeeded, "c": Succeeded}, statuses(rep))
}

// TestIgnoreDependencyOrder runs a chain with a barrier the size of the
// chain: it only opens if every unit runs at the same time.
func TestIgnoreDependencyOrder(t *testing.T) {
	b := &barrier{n: 4}
	rec := &recorder{}
	r := fakeRunner(t, func(ctx context.Context, j *job) error { return b.wait(ctx) },
		WithIgnoreDependencyOrder(), WithEvents(rec.add))
	rep, err := r.Run(testCtx(t), Apply, mkUnits("a", "b:a", "c:b", "d:c")...)
	require.NoError(t, err)
	require.Len(t, rep.Results, 4)
	require.Equal(t, 4, rec.peak())

	waves, err := r.Plan(Apply, mkUnits("a", "b:a", "c:b", "d:c")...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b", "c", "d"}}, waves)
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r := fakeRunner(t, func(ctx context.Context, j *job) error {
		if j.res.Unit == "a" {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	rep, err := r.Run(ctx, Apply, mkUnits("a", "b:a")...)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, map[string]Status{"a": Canceled, "b": Canceled}, statuses(rep))
}

func TestStrings(t *testing.T) {
	require.Equal(t, "canceled", Canceled.String())
	require.Equal(t, "Status(42)", Status(42).String())
	require.Equal(t, "destroy", PhaseDestroy.String())
	require.Equal(t, "apply", Apply.String())
	_, err := fakeRunner(t, nil).Run(t.Context(), Command(0))
	require.ErrorIs(t, err, ErrUnknownCommand)
}

func TestFailFastWinsOverIgnoreErrors(t *testing.T) {
	r := fakeRunner(t, func(ctx context.Context, j *job) error {
		if j.res.Unit == "a" {
			return errBoom
		}
		return nil
	}, WithParallelism(1), WithFailFast(), WithIgnoreErrors())
	rep, err := r.Run(testCtx(t), Apply, mkUnits("a", "b:a", "c")...)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, map[string]Status{"a": Failed, "b": Skipped, "c": Skipped}, statuses(rep))
	res, _ := rep.Result("b")
	require.ErrorIs(t, res.Err, ErrFailFast)
}
