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
	b, _ := json.Marshal(rep)
	fmt.Printf("\n%s\n", b)
	return nil
}
