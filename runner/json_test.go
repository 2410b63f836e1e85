package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/workdir"
)

// sampleReport has every field of a Report and its Results set, with
// durations that are exact in binary floating point.
func sampleReport() Report {
	created := time.Date(2026, 1, 2, 15, 4, 5, 123_000_000, time.UTC)
	return Report{
		Command:  "apply",
		Engine:   Engine{Kind: "terraform", Version: "1.11.4", Path: "/usr/bin/terraform"},
		Duration: 42125 * time.Millisecond,
		Results: []Result{
			{
				Unit: "plat-ue2-dev/elasticache/redis-cluster-1", Status: Succeeded, Started: true,
				Start: created, End: created.Add(1500 * time.Millisecond),
				Duration: 1500 * time.Millisecond, LockWait: 250 * time.Millisecond,
				StateLock: &StateLock{ID: "0b9c5d3e-52a1", Path: "/s/redis.tfstate", Operation: "OperationTypeApply",
					Who: "ci@runner-7", Version: "1.11.4", Created: created, Info: "held by CI"},
				RecoveredLocks: []StateLock{{ID: "dead-1", Path: "/s/redis.tfstate", Operation: "OperationTypePlan", Who: "ci@runner-3", Created: created}},
				Crashed: []CrashedRun{{PID: 4100, Host: "ci-7", Command: "apply", Started: created, EnginePID: 4242,
					EngineOutput: "/w/.terraform/tfisolate-engine/1.out", Waited: 2500 * time.Millisecond, Killed: []string{"4250 terraform-provider-aws"}}},
				InstanceLock: &workdir.Holder{PID: 4242, Host: "ci-7", Since: created},
				Retries:      2, InitSkipped: true, HasChanges: true,
				Plan: &PlanSummary{File: "/w/plan.tfplan", JSONFile: "/w/plan.json", Add: 1, Change: 2, Destroy: 1, Import: 1,
					Changes: []ResourceChange{
						{Address: "tfitest_item.a", Actions: []string{"create"}, Importing: true},
						{Address: "tfitest_item.b", Actions: []string{"delete", "create"}},
					}, OutputChanges: true},
				Outputs: map[string]OutputValue{
					"id":       {Value: json.RawMessage(`"item-a"`), Type: json.RawMessage(`"string"`)},
					"port":     {Value: json.RawMessage(`6379`), Type: json.RawMessage(`"number"`)},
					"password": {Value: json.RawMessage(`"s3cr3t-value"`), Type: json.RawMessage(`"string"`), Sensitive: true},
				},
				Data: map[string]any{"resources": []any{"tfitest_item.a"}, "count": 1.0},
				Log:  "/w/logs/apply.log",
			},
			{Unit: "plat-ue2-dev/app", Status: Failed, Started: true, Duration: 250 * time.Millisecond,
				Err: fmt.Errorf("terraform apply: exit status 1: %w", errors.New("Error: boom"))},
			{Unit: "plat-ue2-dev/web", Status: Skipped, SkippedFor: "plat-ue2-dev/app",
				Err: fmt.Errorf("%w: %w: plat-ue2-dev/app did not succeed", ErrSkipped, ErrDependencyFailed)},
		},
	}
}

// TestReportJSONRoundTrip marshals a Report, checks the documented form
// in the raw JSON, and unmarshals it back field by field.
func TestReportJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NotContains(t, string(b), "s3cr3t", "a sensitive value in the JSON form")
	require.NotContains(t, string(b), `"Err"`)
	require.NotContains(t, string(b), `{}`, "an error or value marshalled as an empty object")

	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "apply", raw["command"])
	require.Equal(t, map[string]any{"kind": "terraform", "version": "1.11.4", "path": "/usr/bin/terraform"}, raw["engine"])
	require.Equal(t, 42.125, raw["duration_seconds"])
	require.Equal(t, map[string]any{"succeeded": 1.0, "failed": 1.0, "skipped": 1.0}, raw["counts"])
	results := raw["results"].([]any)
	require.Len(t, results, 3)
	r0 := results[0].(map[string]any)
	require.Equal(t, "succeeded", r0["status"])
	require.Equal(t, 1.5, r0["duration_seconds"])
	require.Equal(t, 0.25, r0["lock_wait_seconds"])
	require.Equal(t, true, r0["started"])
	require.Equal(t, "2026-01-02T15:04:05.123Z", r0["start"])
	require.Equal(t, "2026-01-02T15:04:06.623Z", r0["end"])
	require.Equal(t, 2.0, r0["retries"])
	require.Equal(t, true, r0["init_skipped"])
	require.Equal(t, true, r0["has_changes"])
	require.NotContains(t, r0, "error", "no error key for a unit that succeeded")
	require.Equal(t, map[string]any{"id": "0b9c5d3e-52a1", "path": "/s/redis.tfstate", "operation": "OperationTypeApply",
		"who": "ci@runner-7", "version": "1.11.4", "created": "2026-01-02T15:04:05.123Z", "info": "held by CI"}, r0["state_lock"])
	require.Equal(t, []any{map[string]any{"id": "dead-1", "path": "/s/redis.tfstate", "operation": "OperationTypePlan",
		"who": "ci@runner-3", "created": "2026-01-02T15:04:05.123Z"}}, r0["recovered_locks"])
	require.Equal(t, []any{map[string]any{"pid": 4100.0, "host": "ci-7", "command": "apply", "started": "2026-01-02T15:04:05.123Z",
		"engine_pid": 4242.0, "engine_output": "/w/.terraform/tfisolate-engine/1.out", "waited_seconds": 2.5,
		"killed": []any{"4250 terraform-provider-aws"}}}, r0["crashed_runs"])
	require.Equal(t, map[string]any{"pid": 4242.0, "host": "ci-7", "since": "2026-01-02T15:04:05.123Z"}, r0["instance_lock"])
	require.Equal(t, map[string]any{"file": "/w/plan.tfplan", "json_file": "/w/plan.json", "destroy_plan": false,
		"add": 1.0, "change": 2.0, "destroy": 1.0, "import": 1.0,
		"changes": []any{
			map[string]any{"address": "tfitest_item.a", "actions": []any{"create"}, "importing": true},
			map[string]any{"address": "tfitest_item.b", "actions": []any{"delete", "create"}},
		},
		"output_changes": true}, r0["plan"])
	require.Equal(t, map[string]any{
		"id":       map[string]any{"value": "item-a", "type": "string", "sensitive": false},
		"port":     map[string]any{"value": 6379.0, "type": "number", "sensitive": false},
		"password": map[string]any{"type": "string", "sensitive": true},
	}, r0["outputs"])
	require.Equal(t, map[string]any{"resources": []any{"tfitest_item.a"}, "count": 1.0}, r0["data"])
	require.Equal(t, "/w/logs/apply.log", r0["log"])
	r1 := results[1].(map[string]any)
	require.Equal(t, "failed", r1["status"])
	require.Equal(t, "terraform apply: exit status 1: Error: boom", r1["error"])
	for _, k := range []string{"state_lock", "recovered_locks", "crashed_runs", "instance_lock", "plan", "outputs", "data", "log"} {
		require.NotContains(t, r1, k, "empty %s is left out", k)
	}
	r2 := results[2].(map[string]any)
	require.Equal(t, "skipped", r2["status"])
	require.Equal(t, false, r2["started"])
	require.Equal(t, 0.0, r2["duration_seconds"])
	require.Equal(t, "plat-ue2-dev/app", r2["skipped_for"])
	require.NotContains(t, r2, "start", "a unit that never started has no start")
	require.NotContains(t, r2, "end")

	var got Report
	require.NoError(t, json.Unmarshal(b, &got))
	requireSameReport(t, rep, got)
}

// requireSameReport compares a report with its JSON round trip: errors
// by message, sensitive values dropped, everything else equal.
func requireSameReport(t *testing.T, want, got Report) {
	t.Helper()
	require.Equal(t, want.Command, got.Command)
	require.Equal(t, want.Engine, got.Engine)
	require.InDelta(t, want.Duration, got.Duration, float64(time.Microsecond))
	require.Len(t, got.Results, len(want.Results))
	for i, w := range want.Results {
		g := got.Results[i]
		require.Equal(t, w.Unit, g.Unit)
		require.Equal(t, w.Status, g.Status, w.Unit)
		require.Equal(t, w.Started, g.Started, w.Unit)
		require.True(t, w.Start.Equal(g.Start), w.Unit)
		require.True(t, w.End.Equal(g.End), w.Unit)
		require.Equal(t, w.SkippedFor, g.SkippedFor, w.Unit)
		if w.Err == nil {
			require.NoError(t, g.Err, w.Unit)
		} else {
			require.EqualError(t, g.Err, w.Err.Error(), w.Unit)
		}
		require.InDelta(t, w.Duration, g.Duration, float64(time.Microsecond), w.Unit)
		require.InDelta(t, w.LockWait, g.LockWait, float64(time.Microsecond), w.Unit)
		require.Equal(t, w.StateLock, g.StateLock, w.Unit)
		require.Equal(t, w.RecoveredLocks, g.RecoveredLocks, w.Unit)
		require.Len(t, g.Crashed, len(w.Crashed), w.Unit)
		for i, c := range w.Crashed {
			gc := g.Crashed[i]
			require.InDelta(t, c.Waited, gc.Waited, float64(time.Microsecond), w.Unit)
			require.True(t, c.Started.Equal(gc.Started), w.Unit)
			c.Waited, gc.Waited, c.Started, gc.Started = 0, 0, time.Time{}, time.Time{}
			require.Equal(t, c, gc, w.Unit)
		}
		require.Equal(t, w.InstanceLock, g.InstanceLock, w.Unit)
		require.Equal(t, w.Retries, g.Retries, w.Unit)
		require.Equal(t, w.InitSkipped, g.InitSkipped, w.Unit)
		require.Equal(t, w.HasChanges, g.HasChanges, w.Unit)
		if w.Plan == nil {
			require.Nil(t, g.Plan, w.Unit)
		} else {
			require.NotNil(t, g.Plan, w.Unit)
			wp, gp := *w.Plan, *g.Plan
			if len(wp.Changes) == 0 {
				require.Empty(t, gp.Changes)
				wp.Changes, gp.Changes = nil, nil
			}
			require.Equal(t, wp, gp, w.Unit)
		}
		require.Len(t, g.Outputs, len(w.Outputs), w.Unit)
		for name, o := range w.Outputs {
			gotOut := g.Outputs[name]
			require.Equal(t, o.Sensitive, gotOut.Sensitive, name)
			require.JSONEq(t, string(o.Type), string(gotOut.Type), name)
			if o.Sensitive {
				require.Empty(t, gotOut.Value, "sensitive %s came back with a value", name)
				continue
			}
			require.JSONEq(t, string(o.Value), string(gotOut.Value), name)
		}
		wantData, err := json.Marshal(w.Data)
		require.NoError(t, err)
		gotData, err := json.Marshal(g.Data)
		require.NoError(t, err)
		require.JSONEq(t, string(wantData), string(gotData), w.Unit)
		require.Equal(t, w.Log, g.Log, w.Unit)
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 999_000_000, time.UTC)
	for _, ev := range []Event{
		{Unit: "a/b", Phase: PhaseApply, Status: Running, Time: at, Retry: 1, Err: errors.New("terraform apply: 429 Too Many Requests")},
		{Unit: "a/b", Phase: PhaseDone, Status: Succeeded, Time: at},
		{Unit: "a/b", Phase: PhaseStep, Status: Running, Time: at},
		{Unit: "a/b", Phase: PhasePrepare, Status: Running, Time: at, WaitPID: 4242},
		{Unit: "a/b", Phase: PhaseWait, Status: Running, Time: at, Wait: &Wait{Lock: WaitInstanceLock,
			Instance: &workdir.Holder{PID: 4242, Host: "ci-7", Since: at}, Waited: 1500 * time.Millisecond}},
		{Unit: "a/b", Phase: PhaseWait, Status: Running, Time: at, Wait: &Wait{Lock: WaitStateLock,
			State: &StateLock{ID: "x-1", Who: "me@ci-7", Created: at}, Waited: 3 * time.Second, Next: time.Second, Done: true}},
		{Unit: "a/b", Phase: PhaseModuleFallback, Status: Running, Time: at, ModuleFallback: &ModuleFallback{
			Server: "https://mods.example.test:8443/", Err: "connection refused", Used: "the modules' own sources"}},
	} {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		var raw map[string]any
		require.NoError(t, json.Unmarshal(b, &raw))
		require.Equal(t, "a/b", raw["unit"])
		require.Equal(t, ev.Phase.String(), raw["phase"])
		require.Equal(t, ev.Status.String(), raw["status"])
		require.Equal(t, "2026-01-02T15:04:05.999Z", raw["time"])
		if ev.Retry == 0 {
			require.NotContains(t, raw, "retry")
			require.NotContains(t, raw, "error")
		} else {
			require.Equal(t, 1.0, raw["retry"])
			require.Equal(t, ev.Err.Error(), raw["error"])
		}
		var got Event
		require.NoError(t, json.Unmarshal(b, &got))
		require.Equal(t, ev.Unit, got.Unit)
		require.Equal(t, ev.Phase, got.Phase)
		require.Equal(t, ev.Status, got.Status)
		require.True(t, ev.Time.Equal(got.Time))
		require.Equal(t, ev.Retry, got.Retry)
		require.Equal(t, ev.WaitPID, got.WaitPID)
		require.Equal(t, ev.Wait, got.Wait)
		require.Equal(t, ev.ModuleFallback, got.ModuleFallback)
		if ev.ModuleFallback == nil {
			require.NotContains(t, raw, "module_fallback")
		} else {
			require.Equal(t, map[string]any{"server": ev.ModuleFallback.Server, "error": ev.ModuleFallback.Err, "used": ev.ModuleFallback.Used}, raw["module_fallback"])
		}
		if ev.Wait == nil {
			require.NotContains(t, raw, "wait")
		} else {
			require.Equal(t, ev.Wait.Lock, raw["wait"].(map[string]any)["lock"])
		}
		if ev.WaitPID == 0 {
			require.NotContains(t, raw, "wait_pid")
		} else {
			require.Equal(t, float64(ev.WaitPID), raw["wait_pid"])
		}
		if ev.Err == nil {
			require.NoError(t, got.Err)
		} else {
			require.EqualError(t, got.Err, ev.Err.Error())
		}
	}
}

func TestJSONRefusesUnknownNames(t *testing.T) {
	var r Result
	require.ErrorContains(t, json.Unmarshal([]byte(`{"unit":"a","status":"exploded"}`), &r), "exploded")
	var e Event
	require.ErrorContains(t, json.Unmarshal([]byte(`{"unit":"a","phase":"teleport","status":"running"}`), &e), "teleport")
}

// TestRealReportJSONRoundTrip round-trips the report of a real run: one
// unit saved a plan, one failed.
func TestRealReportJSONRoundTrip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good := w.component(t, "pair", pairComponent)
	bad := w.component(t, "bad", `resource "terraform_data" "x" { input = var.missing }`)
	units := []Unit{
		{Workdir: workdirSpec("plat-ue2-dev", "good", good, files(t, map[string]any{}, filepath.Join(w.dir, "good.tfstate")))},
		{Workdir: workdirSpec("plat-ue2-dev", "bad", bad, nil)},
	}
	rep, err := w.runner(t).Run(testCtx(t), SavePlan, units...)
	require.Error(t, err)
	require.Equal(t, Succeeded, rep.Results[0].Status)
	require.NotNil(t, rep.Results[0].Plan)
	require.Equal(t, Failed, rep.Results[1].Status)

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"Err"`)
	var raw struct {
		Engine  map[string]string
		Results []map[string]any
	}
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "terraform", raw.Engine["kind"])
	require.Equal(t, "succeeded", raw.Results[0]["status"])
	require.Equal(t, "failed", raw.Results[1]["status"])
	require.IsType(t, 0.0, raw.Results[0]["duration_seconds"])
	require.Positive(t, raw.Results[0]["duration_seconds"])
	require.Contains(t, raw.Results[1]["error"], "missing")

	var got Report
	require.NoError(t, json.Unmarshal(b, &got))
	requireSameReport(t, *rep, got)
}

// TestReportStartEndAndSkippedFor: each unit that ran has its start and
// end time in its Result and in the JSON form ("start", "end"; end -
// start is its duration), a unit that never started has neither, and a
// unit skipped because a unit it depends on failed names that unit in
// SkippedFor ("skipped_for"), its dependents further down too.
func TestReportStartEndAndSkippedFor(t *testing.T) {
	w := newWorld(t)
	good := w.component(t, "pair", pairComponent)
	bad := w.component(t, "bad", `resource "terraform_data" "x" { input = var.missing }`)
	before := time.Now()
	units := []Unit{
		{ID: "good", Workdir: workdirSpec("plat-ue2-dev", "good", good, files(t, map[string]any{}, filepath.Join(w.dir, "good.tfstate")))},
		{ID: "bad", Workdir: workdirSpec("plat-ue2-dev", "bad", bad, nil)},
		{ID: "dep", DependsOn: []string{"bad"}, Workdir: workdirSpec("plat-ue2-dev", "dep", good, nil)},
		{ID: "dep2", DependsOn: []string{"dep"}, Workdir: workdirSpec("plat-ue2-dev", "dep2", good, nil)},
	}
	rep, err := w.runner(t).Run(testCtx(t), Plan, units...)
	require.Error(t, err)
	after := time.Now()
	for _, res := range rep.Results[:2] {
		require.True(t, res.Started, res.Unit)
		require.False(t, res.Start.Before(before), res.Unit)
		require.False(t, res.End.After(after), res.Unit)
		require.Equal(t, res.Duration, res.End.Sub(res.Start), res.Unit)
		require.Empty(t, res.SkippedFor, res.Unit)
	}
	for _, res := range rep.Results[2:] {
		require.Equal(t, Skipped, res.Status, res.Unit)
		require.ErrorIs(t, res.Err, ErrDependencyFailed)
		require.True(t, res.Start.IsZero() && res.End.IsZero(), res.Unit)
		require.Equal(t, "bad", res.SkippedFor, res.Unit)
	}

	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var raw struct{ Results []map[string]any }
	require.NoError(t, json.Unmarshal(b, &raw))
	start, err := time.Parse(time.RFC3339Nano, raw.Results[0]["start"].(string))
	require.NoError(t, err)
	require.True(t, start.Equal(rep.Results[0].Start))
	require.Contains(t, raw.Results[0], "end")
	require.NotContains(t, raw.Results[0], "skipped_for")
	require.NotContains(t, raw.Results[2], "start")
	require.NotContains(t, raw.Results[2], "end")
	require.Equal(t, "bad", raw.Results[2]["skipped_for"])
	require.Equal(t, "bad", raw.Results[3]["skipped_for"])
	var got Report
	require.NoError(t, json.Unmarshal(b, &got))
	requireSameReport(t, *rep, got)
}
