package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/admission"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
	"github.com/tfisolate/tfisolate/workdir"
)

func TestWithMemoryBudgetRefusesANegativeBudget(t *testing.T) {
	wd, err := workdir.New(t.TempDir())
	require.NoError(t, err)
	_, err = New(WithWorkdirs(wd), WithMemoryBudget(-5))
	require.ErrorIs(t, err, ErrBadOption)
	require.ErrorContains(t, err, "WithMemoryBudget(-5)")
	for _, b := range []int64{0, 1 << 30, NoMemoryBudget} {
		_, err = New(WithWorkdirs(wd), WithMemoryBudget(b))
		require.NoError(t, err, b)
	}
}

func TestMemoryFieldsInJSON(t *testing.T) {
	res := Result{Unit: "a/b", Status: Failed, Started: true, MemoryPeak: 600 << 20, MemoryWait: 1500 * time.Millisecond, OutOfMemory: true,
		Err: &OutOfMemoryError{Unit: "a/b", Peak: 600 << 20, Budget: 1 << 30, Err: errors.New("terraform plan: signal: killed")}}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, float64(600<<20), raw["memory_peak_bytes"])
	require.Equal(t, 1.5, raw["memory_wait_seconds"])
	require.Equal(t, true, raw["out_of_memory"])
	require.Contains(t, raw["error"], "out of memory: the kernel killed a process of unit a/b for memory (the unit's peak 600 MiB, budget 1024 MiB)")
	var got Result
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, res.MemoryPeak, got.MemoryPeak)
	require.Equal(t, res.MemoryWait, got.MemoryWait)
	require.True(t, got.OutOfMemory)

	b, err = json.Marshal(Result{Unit: "a/b", Status: Succeeded})
	require.NoError(t, err)
	require.NotContains(t, string(b), "memory")

	ev := Event{Unit: "a/b", Phase: PhaseMemoryWait, Status: Queued, Memory: 400 << 20, MemoryWait: 2 * time.Second}
	b, err = json.Marshal(ev)
	require.NoError(t, err)
	require.Contains(t, string(b), `"phase":"memory-wait"`)
	require.Contains(t, string(b), `"memory_bytes":419430400`)
	require.Contains(t, string(b), `"memory_wait_seconds":2`)
	var gotEv Event
	require.NoError(t, json.Unmarshal(b, &gotEv))
	require.Equal(t, ev.Phase, gotEv.Phase)
	require.Equal(t, ev.Memory, gotEv.Memory)
	require.Equal(t, ev.MemoryWait, gotEv.MemoryWait)
}

func TestOutOfMemoryErrorWraps(t *testing.T) {
	te := &tfcmd.Error{Command: "plan", Stderr: "Error: Plugin did not respond"}
	err := error(&OutOfMemoryError{Unit: "u", Err: te})
	require.ErrorIs(t, err, ErrOutOfMemory)
	var got *tfcmd.Error
	require.ErrorAs(t, err, &got)
	require.Contains(t, err.Error(), "no memory budget")
}

// Which commands run again after an OOM kill, and which never do.
func TestOutOfMemoryRetryCoversOnlyCommandsSafeToRepeat(t *testing.T) {
	notStarted := &tfcmd.Error{Command: "apply", Stderr: "Error: Plugin did not respond"}
	started := &tfcmd.Error{Command: "apply", Stderr: "Error: Plugin did not respond", ChangeStarted: true}
	for _, tc := range []struct {
		cmd  Command
		err  error
		want bool
	}{
		{Plan, notStarted, true}, {Init, notStarted, true}, {Validate, notStarted, true}, {Output, notStarted, true},
		{SavePlan, notStarted, true},
		{Apply, notStarted, true}, {Apply, started, false}, {Destroy, started, false},
		{ApplyPlan, notStarted, false},
	} {
		rs := &runState{cmd: tc.cmd, cfg: &config{}}
		require.Equal(t, tc.want, rs.retryableAfterOOM(tc.err), "%s changeStarted=%v", tc.cmd, tc.err.(*tfcmd.Error).ChangeStarted)
		rs.cfg.retry.NoOutOfMemoryRetry = true
		require.False(t, rs.retryableAfterOOM(tc.err), "%s with NoOutOfMemoryRetry", tc.cmd)
	}
}

// Each command is admitted by the peaks of commands that use memory
// alike; a custom step by its own.
func TestMemClassOf(t *testing.T) {
	for _, tc := range []struct {
		cmd  Command
		want admission.Class
	}{
		{Init, admission.ClassRead}, {Validate, admission.ClassRead}, {Output, admission.ClassRead},
		{Plan, admission.ClassPlan}, {SavePlan, admission.ClassPlan},
		{Apply, admission.ClassApply}, {ApplyPlan, admission.ClassApply}, {Destroy, admission.ClassApply},
	} {
		require.Equal(t, tc.want, memClassOf(tc.cmd), "%s", tc.cmd)
	}
}

// memoryChildRole makes the test binary a host that runs Plan over the
// units of a memoryChild config, inside the memory cgroup its parent
// moved it into, and prints the report as JSON on its last line.
const memoryChildRole = "memory"

type memoryChild struct {
	TF, Root, Cache string
	Specs           []workdir.Spec
	Env             map[string]string // every unit's
	Budget          int64             // WithMemoryBudget's argument
	NoRetry         bool
}

func runMemoryChild() error {
	var cfg memoryChild
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	// The parent moves this process into the cgroup, then says go.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("no go: %w", err)
	}
	wd, cache, err := openChildStores(cfg.Root, cfg.Cache)
	if err != nil {
		return err
	}
	retry := DefaultRetry
	retry.NoOutOfMemoryRetry = cfg.NoRetry
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF), WithParallelism(len(cfg.Specs)),
		WithMemoryBudget(cfg.Budget), WithRetry(retry))
	if err != nil {
		return err
	}
	var units []Unit
	for _, s := range cfg.Specs {
		units = append(units, Unit{Workdir: s, Env: cfg.Env})
	}
	rep, err := r.Run(context.Background(), Plan, units...)
	if rep == nil {
		return fmt.Errorf("no report: %v", err)
	}
	// errors.Is does not cross the JSON report: the child tells.
	out := memoryChildReport{Report: rep}
	for _, res := range rep.Results {
		if errors.Is(res.Err, ErrOutOfMemory) {
			out.IsOutOfMemory = append(out.IsOutOfMemory, res.Unit)
		}
	}
	b, _ := json.Marshal(out)
	fmt.Printf("\n%s\n", b)
	return nil
}

// memoryChildReport is what the memory child host prints last.
type memoryChildReport struct {
	Report *Report
	// IsOutOfMemory are the units whose error wraps ErrOutOfMemory
	// (errors.Is in the child).
	IsOutOfMemory []string
}

func TestExpectedMemoryNegativeIsRefused(t *testing.T) {
	wd, err := workdir.New(t.TempDir())
	require.NoError(t, err)
	r, err := New(WithWorkdirs(wd), WithTerraform("/nonexistent/terraform"))
	require.NoError(t, err)
	_, err = r.Run(context.Background(), Plan, Unit{Workdir: workdir.Spec{Stack: "s", Instance: "i", Source: t.TempDir()}, ExpectedMemory: -1})
	require.ErrorIs(t, err, ErrInvalidUnit)
	require.ErrorContains(t, err, "ExpectedMemory -1")
}
