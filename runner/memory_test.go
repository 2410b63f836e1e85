package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
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

// What terraform says when a plugin died under it, and what it says
// for errors of its own.
func TestPluginDiedMessages(t *testing.T) {
	for _, msg := range []string{
		"Error: Plugin did not respond\n\nThe plugin encountered an error, and failed to respond to the plugin.(*GRPCProvider).ApplyResourceChange call.",
		"Error: Request cancelled\n\nThe plugin.(*GRPCProvider).PlanResourceChange request was cancelled.",
		"rpc error: code = Unavailable desc = error reading from server: EOF",
		"Error: The terraform-provider-tfitest_v1.0.0 plugin crashed!",
		// go-plugin's, for a plugin killed while it started.
		"Error: Failed to load plugin schemas\n\nError while loading schemas for plugin components: Failed to obtain provider schema: " +
			"Could not load the schema for provider example.test/x/y: failed to instantiate provider \"example.test/x/y\" to obtain schema: " +
			"Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout",
		"failed to instantiate provider \"example.test/x/y\" to obtain schema: plugin exited before we could connect",
	} {
		require.True(t, pluginDiedRe.MatchString(msg), msg)
	}
	for _, msg := range []string{
		"Error: Unsupported argument",
		"Error: Error acquiring the state lock",
		"Error: Request failed: the upload was cancelled by the user",
	} {
		require.False(t, pluginDiedRe.MatchString(msg), msg)
	}
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
		m := &memGate{rs: &runState{cmd: tc.cmd, cfg: &config{}}}
		require.Equal(t, tc.want, m.retryable(&OutOfMemoryError{Err: tc.err}), "%s changeStarted=%v", tc.cmd, tc.err.(*tfcmd.Error).ChangeStarted)
		m.rs.cfg.retry.NoOutOfMemoryRetry = true
		require.False(t, m.retryable(&OutOfMemoryError{Err: tc.err}), "%s with NoOutOfMemoryRetry", tc.cmd)
	}
}

// A record of peaks another user could have written steers nothing.
func TestMemoryRecordMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, memoryFile)
	rec := `{"version":1,"peaks":[{"engine":"terraform","source":"/src/big","bytes":1234}]}`
	require.NoError(t, os.WriteFile(path, []byte(rec), 0o600))
	m := &memGate{rs: &runState{cfg: &config{logger: slog.New(slog.DiscardHandler)}, eng: engine.Info{Kind: engine.Terraform}}, path: path}
	require.Equal(t, []memoryPeak{{Engine: "terraform", Source: "/src/big", Bytes: 1234}}, m.load())
	require.NoError(t, os.Chmod(path, 0o620))
	require.Empty(t, m.load(), "a group-writable record is ignored")
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, os.WriteFile(path, []byte(`{"version":7}`), 0o600))
	require.Empty(t, m.load(), "another version's record is ignored")
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

// The record's high-water mark: raised at once, lowered only by a Run
// whose units succeeded, a quarter of the way at a time.
func TestMemoryMarkDecaysOnlyByMeasurement(t *testing.T) {
	const mib = 1 << 20
	require.Equal(t, int64(600*mib), nextMark(400*mib, 600*mib, 600*mib), "a higher peak replaces the mark")
	require.Equal(t, int64(400*mib), nextMark(400*mib, 100*mib, 0), "failed units never lower it")
	mark := int64(486 * mib)
	for range 3 {
		mark = nextMark(mark, 300*mib, 300*mib)
	}
	require.Greater(t, mark, int64(300*mib+(186*mib)*4/10), "three lighter Runs keep more than 40%% of the gap")
	require.Less(t, mark, int64(300*mib+(186*mib)/2), "and less than half")
	require.Equal(t, int64(350*mib), nextMark(400*mib, 350*mib, 200*mib), "never below the Run's own peak")
}

// Admission takes the Run's class, else the heaviest known class (an
// older record's unknown class included), and a unit's hint raises it.
func TestMemoryExpectedByClass(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, memoryFile)
	// A version 1 record (no classes) and an output Run's peak.
	rec := `{"version":1,"peaks":[{"engine":"terraform","source":"/src/big","bytes":509607936}]}`
	require.NoError(t, os.WriteFile(path, []byte(rec), 0o600))
	gate := func(cmd Command, units ...Unit) *memGate {
		m := &memGate{rs: &runState{cmd: cmd, units: units, cfg: &config{logger: slog.New(slog.DiscardHandler)}, eng: engine.Info{Kind: engine.Terraform}},
			class: memClassOf(cmd), path: path, learned: map[string]map[string]int64{}, seen: map[string]int64{}, seenOK: map[string]int64{}}
		for _, p := range m.load() {
			m.learn(memKey(p.Engine, p.Source), p.Class, p.Bytes)
		}
		return m
	}
	key := memKey("terraform", "/src/big")
	u := Unit{}
	m := gate(Output, u)
	got, known := m.expected(0, key)
	require.True(t, known)
	require.Equal(t, int64(486<<20), got, "an old record's peak of unknown class counts for a class with none")
	m.seen[key], m.seenOK[key] = 56<<20, 56<<20
	m.save()

	m = gate(Output, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(56<<20), got, "output has its own peak now")
	m = gate(Apply, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(486<<20), got, "apply has none: the heaviest known, not output's")
	m.seen[key], m.seenOK[key] = 400<<20, 400<<20
	m.save()
	m = gate(Plan, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(486<<20), got, "plan has none: the heaviest known")
	m = gate(Apply, u)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(400<<20), got, "apply's own")

	hinted := Unit{ExpectedMemory: 900 << 20}
	m = gate(Apply, hinted)
	got, _ = m.expected(0, key)
	require.Equal(t, int64(900<<20), got, "a hint raises")
	m = gate(Apply, Unit{ExpectedMemory: 10 << 20})
	got, _ = m.expected(0, key)
	require.Equal(t, int64(400<<20), got, "a hint never lowers what was measured")
	got, known = m.expected(0, memKey("terraform", "/src/new"))
	require.True(t, known, "a hinted unit of a component never measured needs no measuring run")
	require.Equal(t, int64(10<<20), got)
	got, known = gate(Apply, u).expected(0, memKey("terraform", "/src/new"))
	require.False(t, known)
	require.Equal(t, unmeasuredPeak, got)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var saved memoryRecord
	require.NoError(t, json.Unmarshal(b, &saved))
	require.Equal(t, memoryVersion, saved.Version)
	var classes []string
	for _, p := range saved.Peaks {
		classes = append(classes, p.Class)
	}
	require.Equal(t, []string{"", memClassApply, memClassRead}, classes, "the old peak is kept beside the classes' own")
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
