package admission

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

const mib = 1 << 20

// waitLog records the waits a gate reports.
type waitLog struct {
	mu    sync.Mutex
	waits []Wait
}

func (l *waitLog) add(w Wait) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits = append(l.waits, w)
}

func (l *waitLog) all() []Wait {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Wait(nil), l.waits...)
}

// A unit starts when what runs and what it is expected to use fit in the
// budget; one held back is reported once as it begins to wait, and again,
// with how long it waited, when it is admitted.
func TestMemoryAdmitsWhatFits(t *testing.T) {
	var log waitLog
	units := []Unit{{ID: "a", Source: "/src/a", Expected: 400 * mib}, {ID: "b", Source: "/src/b", Expected: 400 * mib},
		{ID: "c", Source: "/src/c", Expected: 400 * mib}}
	m := NewMemory(MemoryConfig{Budget: 1000 * mib, Engine: "terraform", Class: ClassPlan, Parallelism: 3, Units: units, OnWait: log.add})
	require.Equal(t, int64(1000*mib), m.Budget())
	require.True(t, m.Admit(0, 0))
	require.True(t, m.Admit(1, 1))
	require.False(t, m.Admit(2, 2), "a third 400 MiB unit does not fit in 1000 MiB")
	require.False(t, m.Admit(2, 2))
	require.Equal(t, []Wait{{Unit: 2, Memory: 400 * mib}}, log.all(), "the wait is reported once, as it begins")
	m.end(0, true)
	require.True(t, m.Admit(2, 1), "it fits once a unit released its memory")
	waits := log.all()
	require.Len(t, waits, 2)
	require.Equal(t, 2, waits[1].Unit)
	require.Equal(t, int64(400*mib), waits[1].Memory)
	require.Positive(t, waits[1].Waited)
	require.Equal(t, waits[1].Waited, m.waitedFor(2))
}

// With nothing running, the next unit starts, even one expected to
// need more than the whole budget.
func TestMemoryAdmitsAUnitOverTheBudgetAlone(t *testing.T) {
	m := NewMemory(MemoryConfig{Budget: 100 * mib, Engine: "terraform", Class: ClassPlan, Parallelism: 2,
		Units: []Unit{{ID: "big", Source: "/src/big", Expected: 300 * mib}, {ID: "small", Source: "/src/small", Expected: mib}}})
	require.True(t, m.Admit(0, 0))
	require.False(t, m.Admit(1, 1), "nothing starts beside it")
	m.end(0, true)
	require.True(t, m.Admit(1, 0))
}

// Under a budget too tight for the parallelism's worth of units never
// measured, one unit of a component never measured runs first and its
// others wait for it; another component's first unit does not.
func TestMemoryTightBudgetProbesOneUnitFirst(t *testing.T) {
	units := []Unit{{ID: "a1", Source: "/src/a"}, {ID: "a2", Source: "/src/a"}, {ID: "b1", Source: "/src/b"}}
	m := NewMemory(MemoryConfig{Budget: 3 * UnmeasuredPeak, Engine: "terraform", Class: ClassPlan, Parallelism: 4, Units: units})
	require.True(t, m.Admit(0, 0))
	require.False(t, m.Admit(1, 1), "a's second unit waits for its first")
	require.True(t, m.Admit(2, 1), "b's first unit is measured beside a's")
	m.end(0, true)
	require.True(t, m.Admit(1, 1), "a's first unit ran")

	// A budget that holds the parallelism's worth: no unit waits for another.
	m = NewMemory(MemoryConfig{Budget: 4 * UnmeasuredPeak, Engine: "terraform", Class: ClassPlan, Parallelism: 4, Units: units})
	require.True(t, m.Admit(0, 0))
	require.True(t, m.Admit(1, 1))
}

// fakeOOMCounter is a kernel OOM-kill count that the test raises.
type fakeOOMCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *fakeOOMCounter) read() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, true
}

func (c *fakeOOMCounter) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

// A terraform failure while the kernel's OOM-kill count rose, that says
// a plugin died under it, is an out-of-memory kill: it runs again once
// when Retryable says so, reported as it waits; other failures are not.
func TestMemoryRunTellsAnOutOfMemoryKill(t *testing.T) {
	pluginDied := &tfcmd.Error{Command: "plan", Stderr: "Error: Plugin did not respond"}
	for _, tc := range []struct {
		name      string
		kills     []bool  // per attempt: the kernel killed something meanwhile
		errs      []error // per attempt
		retryable bool
		want      Use
		wantErr   error
	}{
		{name: "killed then fine", kills: []bool{true, false}, errs: []error{pluginDied, nil}, retryable: true,
			want: Use{Retries: 1}},
		{name: "killed twice", kills: []bool{true, true}, errs: []error{pluginDied, pluginDied}, retryable: true,
			want: Use{Retries: 1, OutOfMemory: true}, wantErr: pluginDied},
		{name: "not retryable", kills: []bool{true}, errs: []error{pluginDied}, retryable: false,
			want: Use{OutOfMemory: true}, wantErr: pluginDied},
		{name: "no kill", kills: []bool{false}, errs: []error{pluginDied}, retryable: true,
			want: Use{}, wantErr: pluginDied},
		{name: "not terraform's failure", kills: []bool{true}, errs: []error{errors.New("plugin did not respond")}, retryable: true,
			want: Use{}},
		{name: "terraform's own error", kills: []bool{true}, errs: []error{&tfcmd.Error{Command: "plan", Stderr: "Error: Unsupported argument"}},
			retryable: true, want: Use{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log waitLog
			var oom fakeOOMCounter
			m := NewMemory(MemoryConfig{Budget: -1, Engine: "terraform", Class: ClassPlan, Units: []Unit{{ID: "u", Source: "/src/u"}},
				Retryable: func(err error) bool { return tc.retryable }, OnWait: log.add})
			m.oomKills = oom.read
			attempts := 0
			use, err := m.Run(context.Background(), 0, func(ctx context.Context, i int) error {
				require.Equal(t, 0, i)
				if tc.kills[attempts] {
					oom.kill()
				}
				attempts++
				return tc.errs[attempts-1]
			})
			if tc.want.Retries > 0 {
				require.Positive(t, use.Wait, "the wait to run again counts")
			}
			use.Wait = 0
			require.Equal(t, tc.want, use)
			if tc.wantErr != nil {
				require.Equal(t, tc.wantErr, err, "the attempt's own error")
			} else if tc.want.Retries == 0 {
				require.Equal(t, tc.errs[0], err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, len(tc.errs), attempts)
			var retries []Wait
			for _, w := range log.all() {
				if w.OutOfMemory != nil {
					retries = append(retries, w)
				}
			}
			require.Len(t, retries, tc.want.Retries, "each retry is reported as it waits")
		})
	}
}

// A unit whose context ended was interrupted, never killed for memory.
func TestMemoryRunNeverTakesAnInterruptForAnOOMKill(t *testing.T) {
	var oom fakeOOMCounter
	m := NewMemory(MemoryConfig{Budget: -1, Engine: "terraform", Class: ClassPlan, Units: []Unit{{ID: "u", Source: "/src/u"}},
		Retryable: func(error) bool { return true }})
	m.oomKills = oom.read
	ctx, cancel := context.WithCancel(context.Background())
	pluginDied := &tfcmd.Error{Command: "plan", Stderr: "Error: Plugin did not respond"}
	use, err := m.Run(ctx, 0, func(context.Context, int) error {
		oom.kill()
		cancel()
		return pluginDied
	})
	require.Equal(t, pluginDied, err)
	require.False(t, use.OutOfMemory)
}

// A unit killed for memory while others ran runs again only when fewer
// run, or when its context ends.
func TestMemoryReadmitWaitsForFewerUnits(t *testing.T) {
	units := []Unit{{ID: "a", Source: "/src/a", Expected: mib}, {ID: "b", Source: "/src/b", Expected: mib}, {ID: "c", Source: "/src/c", Expected: mib}}
	m := NewMemory(MemoryConfig{Budget: 1000 * mib, Engine: "terraform", Class: ClassPlan, Parallelism: 3, Units: units})
	require.True(t, m.Admit(1, 0))
	require.True(t, m.Admit(2, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, m.readmit(ctx, 0, 2), "two others run still: it waits until its context ends")

	done := make(chan bool, 1)
	go func() { done <- m.readmit(context.Background(), 0, 2) }()
	m.end(1, true)
	require.True(t, <-done, "one other runs now")
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Contains(t, m.running, 0, "admitted again")
	require.Zero(t, m.retrying)
}
