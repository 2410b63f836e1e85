package runner

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// The JSON forms below are part of the API: field names are stable,
// statuses and phases are their String forms, errors are their messages,
// durations are seconds (a float), times are RFC 3339. Sensitive output
// values are never written: such an output has "sensitive": true and no
// "value". Unmarshalling gives back every field (an error as an error with
// the same message; sentinel identity is not kept).

type jsonEvent struct {
	Unit   string     `json:"unit"`
	Phase  Phase      `json:"phase"`
	Status Status     `json:"status"`
	Time   time.Time  `json:"time"`
	Engine jsonEngine `json:"engine"`
	Retry  int        `json:"retry,omitempty"`
	Error  string     `json:"error,omitempty"`
	// WaitPID: see Event.WaitPID.
	WaitPID int       `json:"wait_pid,omitempty"`
	Wait    *jsonWait `json:"wait,omitempty"`
	// Memory, MemoryWait and CPUWait: see Event.Memory, Event.MemoryWait
	// and Event.CPUWait.
	Memory     int64   `json:"memory_bytes,omitempty"`
	MemoryWait float64 `json:"memory_wait_seconds,omitempty"`
	CPUWait    float64 `json:"cpu_wait_seconds,omitempty"`
	// Fallback: see Event.Fallback.
	Fallback *jsonFallback `json:"fallback,omitempty"`
	// ModuleFallback: see Event.ModuleFallback.
	ModuleFallback *jsonModuleFallback `json:"module_fallback,omitempty"`
}

type jsonModuleFallback struct {
	Server string `json:"server"`
	Error  string `json:"error"`
	Used   string `json:"used"`
}

func toJSONModuleFallback(f *ModuleFallback) *jsonModuleFallback {
	if f == nil {
		return nil
	}
	return &jsonModuleFallback{Server: f.Server, Error: f.Err, Used: f.Used}
}

func fromJSONModuleFallback(j *jsonModuleFallback) *ModuleFallback {
	if j == nil {
		return nil
	}
	return &ModuleFallback{Server: j.Server, Err: j.Error, Used: j.Used}
}

type jsonFallback struct {
	Provider string `json:"provider"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Source   string `json:"source"`
	Listing  bool   `json:"listing,omitempty"`
	Error    string `json:"error"`
	Used     string `json:"used"`
}

func toJSONFallback(f *pluginc.Fallback) *jsonFallback {
	if f == nil {
		return nil
	}
	return &jsonFallback{Provider: f.Package.Provider.String(), Version: f.Package.Version, Platform: f.Package.Platform,
		Source: f.Source, Listing: f.Listing, Error: f.Err, Used: f.Used}
}

func fromJSONFallback(j *jsonFallback) (*pluginc.Fallback, error) {
	if j == nil {
		return nil, nil
	}
	p, err := pluginc.ParseProvider(j.Provider)
	if err != nil {
		return nil, err
	}
	return &pluginc.Fallback{Package: pluginc.PackageID{Provider: p, Version: j.Version, Platform: j.Platform},
		Source: j.Source, Listing: j.Listing, Err: j.Error, Used: j.Used}, nil
}

type jsonWait struct {
	Lock     string          `json:"lock"`
	Instance *workdir.Holder `json:"instance,omitempty"`
	State    *jsonStateLock  `json:"state,omitempty"`
	Waited   float64         `json:"waited_seconds"`
	Next     float64         `json:"next_seconds,omitempty"`
	Done     bool            `json:"done"`
}

func toJSONWait(w *Wait) *jsonWait {
	if w == nil {
		return nil
	}
	j := &jsonWait{Lock: w.Lock, Instance: w.Instance, Waited: w.Waited.Seconds(), Next: w.Next.Seconds(), Done: w.Done}
	if w.State != nil {
		s := jsonStateLock(*w.State)
		j.State = &s
	}
	return j
}

func fromJSONWait(j *jsonWait) *Wait {
	if j == nil {
		return nil
	}
	w := &Wait{Lock: j.Lock, Instance: j.Instance, Waited: seconds(j.Waited), Next: seconds(j.Next), Done: j.Done}
	if j.State != nil {
		s := StateLock(*j.State)
		w.State = &s
	}
	return w
}

// MarshalJSON gives the event's documented JSON form:
//
//	{"unit": "a/b", "phase": "apply", "status": "running",
//	 "time": "2026-01-02T15:04:05.999Z",
//	 "engine": {"kind": "terraform", "version": "1.11.4", "path": "/usr/bin/terraform"},
//	 "retry": 1, "error": "...", "wait_pid": 4242,
//	 "wait": {"lock": "state", "state": {"id": "...", "who": "user@host", ...},
//	   "instance": {"pid": 4242, "host": "ci-7", "since": "..."},
//	   "waited_seconds": 12.5, "next_seconds": 8, "done": false},
//	 "memory_bytes": 629145600, "memory_wait_seconds": 4.5,
//	 "fallback": {"provider": "registry.example/hashicorp/aws",
//	   "version": "6.0.0", "platform": "linux_amd64",
//	   "source": "network mirror https://mirror.internal:8443/",
//	   "listing": true, "error": "...", "used": "provider registry"},
//	 "module_fallback": {"server": "https://mods.internal:8443/",
//	   "error": "...", "used": "the modules' own sources"}}
//
// retry, error, wait_pid, wait, memory_bytes, memory_wait_seconds,
// fallback and module_fallback are left out when empty (and in wait, instance, state and
// next_seconds; in fallback, listing).
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonEvent{Unit: e.Unit, Phase: e.Phase, Status: e.Status, Time: e.Time, Engine: jsonEngine(e.Engine), Retry: e.Retry, Error: errString(e.Err), WaitPID: e.WaitPID, Wait: toJSONWait(e.Wait),
		Memory: e.Memory, MemoryWait: e.MemoryWait.Seconds(), CPUWait: e.CPUWait.Seconds(), Fallback: toJSONFallback(e.Fallback),
		ModuleFallback: toJSONModuleFallback(e.ModuleFallback)})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j jsonEvent
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	fb, err := fromJSONFallback(j.Fallback)
	if err != nil {
		return err
	}
	*e = Event{Unit: j.Unit, Phase: j.Phase, Status: j.Status, Time: j.Time, Engine: Engine(j.Engine), Retry: j.Retry, Err: stringErr(j.Error), WaitPID: j.WaitPID, Wait: fromJSONWait(j.Wait),
		Memory: j.Memory, MemoryWait: seconds(j.MemoryWait), CPUWait: seconds(j.CPUWait), Fallback: fb,
		ModuleFallback: fromJSONModuleFallback(j.ModuleFallback)}
	return nil
}

type jsonResult struct {
	Unit         string                     `json:"unit"`
	Status       Status                     `json:"status"`
	Error        string                     `json:"error,omitempty"`
	Started      bool                       `json:"started"`
	Start        time.Time                  `json:"start,omitzero"`
	End          time.Time                  `json:"end,omitzero"`
	SkippedFor   string                     `json:"skipped_for,omitempty"`
	Duration     float64                    `json:"duration_seconds"`
	LockWait     float64                    `json:"lock_wait_seconds"`
	StateLock    *jsonStateLock             `json:"state_lock,omitempty"`
	Recovered    []jsonStateLock            `json:"recovered_locks,omitempty"`
	Crashed      []jsonCrashedRun           `json:"crashed_runs,omitempty"`
	InstanceLock *workdir.Holder            `json:"instance_lock,omitempty"`
	Retries      int                        `json:"retries"`
	MemoryPeak   int64                      `json:"memory_peak_bytes,omitempty"`
	MemoryWait   float64                    `json:"memory_wait_seconds,omitempty"`
	CPUWait      float64                    `json:"cpu_wait_seconds,omitempty"`
	OutOfMemory  bool                       `json:"out_of_memory,omitempty"`
	Unchanged    bool                       `json:"unchanged"`
	InitSkipped  bool                       `json:"init_skipped"`
	HasChanges   bool                       `json:"has_changes"`
	Summary      *jsonSummary               `json:"summary,omitempty"`
	Plan         *jsonPlan                  `json:"plan,omitempty"`
	Outputs      map[string]jsonOutputValue `json:"outputs,omitempty"`
	Data         any                        `json:"data,omitempty"`
	Log          string                     `json:"log,omitempty"`
}

type jsonSummary struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
	Import  int `json:"import"`
}

type jsonCrashedRun struct {
	PID          int       `json:"pid"`
	Host         string    `json:"host"`
	Command      string    `json:"command"`
	Started      time.Time `json:"started"`
	EnginePID    int       `json:"engine_pid,omitempty"`
	EngineOutput string    `json:"engine_output,omitempty"`
	Waited       float64   `json:"waited_seconds,omitempty"`
	Killed       []string  `json:"killed,omitempty"`
}

type jsonStateLock struct {
	ID        string    `json:"id"`
	Path      string    `json:"path,omitempty"`
	Operation string    `json:"operation,omitempty"`
	Who       string    `json:"who,omitempty"`
	Version   string    `json:"version,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	Info      string    `json:"info,omitempty"`
}

type jsonPlan struct {
	File          string               `json:"file"`
	JSONFile      string               `json:"json_file"`
	DestroyPlan   bool                 `json:"destroy_plan"`
	Add           int                  `json:"add"`
	Change        int                  `json:"change"`
	Destroy       int                  `json:"destroy"`
	Import        int                  `json:"import"`
	Changes       []jsonResourceChange `json:"changes"`
	OutputChanges bool                 `json:"output_changes"`

	// The redacted rendering; absent in reports written before it existed.
	RedactedJSONFile string `json:"redacted_json_file,omitempty"`
}

type jsonResourceChange struct {
	Address   string   `json:"address"`
	Actions   []string `json:"actions"`
	Importing bool     `json:"importing,omitempty"`
}

type jsonOutputValue struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Type      json.RawMessage `json:"type,omitempty"`
	Sensitive bool            `json:"sensitive"`
}

// MarshalJSON gives the result's documented JSON form:
//
//	{"unit": "a/b", "status": "failed", "error": "terraform apply: ...",
//	 "started": true, "start": "2026-01-02T15:04:05.5Z", "end": "2026-01-02T15:04:18Z",
//	 "skipped_for": "a/vpc",
//	 "duration_seconds": 12.5, "lock_wait_seconds": 3.2,
//	 "state_lock": {"id": "...", "path": "...", "operation": "OperationTypeApply",
//	   "who": "user@host", "version": "1.11.4", "created": "...", "info": ""},
//	 "recovered_locks": [{"id": "...", ...}],
//	 "crashed_runs": [{"pid": 4100, "host": "ci-7", "command": "apply",
//	   "started": "...", "engine_pid": 4242, "engine_output": "/path/x.out",
//	   "waited_seconds": 2.5, "killed": ["4250 terraform-provider-aws"]}],
//	 "instance_lock": {"pid": 4242, "host": "ci-7", "since": "..."},
//	 "retries": 1, "memory_peak_bytes": 629145600, "memory_wait_seconds": 4.5,
//	 "out_of_memory": true,
//	 "unchanged": false, "init_skipped": false, "has_changes": true,
//	 "summary": {"add": 1, "change": 0, "destroy": 0, "import": 0},
//	 "plan": {"file": "...", "json_file": "...", "redacted_json_file": "...", "destroy_plan": false,
//	   "add": 1, "change": 0, "destroy": 0, "import": 0,
//	   "changes": [{"address": "x.y", "actions": ["create"]}],
//	   "output_changes": false},
//	 "outputs": {"id": {"value": "abc", "type": "string", "sensitive": false},
//	   "password": {"sensitive": true}},
//	 "data": ..., "log": "/path/to/unit.log"}
//
// error, start, end, skipped_for, state_lock, recovered_locks,
// crashed_runs, instance_lock, memory_peak_bytes, memory_wait_seconds,
// out_of_memory, summary, plan, outputs, data and log are left out when
// empty (and engine_pid, engine_output, waited_seconds and killed in a
// crashed run, and a plan's redacted_json_file).
// status is "succeeded", "failed", "skipped" (never started; error names
// why) or "canceled" (started, then interrupted); see Status. start and
// end are when a unit that started began and ended (end - start is
// duration_seconds); skipped_for is the ID of the failed unit a skipped
// unit depends on (error says so too, as text). Reports written before
// start, end and skipped_for existed read as without them.
func (r Result) MarshalJSON() ([]byte, error) {
	j := jsonResult{
		Unit: r.Unit, Status: r.Status, Error: errString(r.Err), Started: r.Started,
		Start: r.Start, End: r.End, SkippedFor: r.SkippedFor,
		Duration: r.Duration.Seconds(), LockWait: r.LockWait.Seconds(),
		InstanceLock: r.InstanceLock, Retries: r.Retries, Unchanged: r.Unchanged, InitSkipped: r.InitSkipped,
		HasChanges: r.HasChanges, Data: r.Data, Log: r.Log,
		MemoryPeak: r.MemoryPeak, MemoryWait: r.MemoryWait.Seconds(), CPUWait: r.CPUWait.Seconds(), OutOfMemory: r.OutOfMemory,
	}
	if l := r.StateLock; l != nil {
		j.StateLock = &jsonStateLock{ID: l.ID, Path: l.Path, Operation: l.Operation, Who: l.Who, Version: l.Version, Created: l.Created, Info: l.Info}
	}
	if s := r.Summary; s != nil {
		j.Summary = &jsonSummary{Add: s.Add, Change: s.Change, Destroy: s.Destroy, Import: s.Import}
	}
	for _, l := range r.RecoveredLocks {
		j.Recovered = append(j.Recovered, jsonStateLock(l))
	}
	for _, c := range r.Crashed {
		j.Crashed = append(j.Crashed, jsonCrashedRun{PID: c.PID, Host: c.Host, Command: c.Command, Started: c.Started,
			EnginePID: c.EnginePID, EngineOutput: c.EngineOutput, Waited: c.Waited.Seconds(), Killed: c.Killed})
	}
	if p := r.Plan; p != nil {
		j.Plan = &jsonPlan{File: p.File, JSONFile: p.JSONFile, RedactedJSONFile: p.RedactedJSONFile, DestroyPlan: p.DestroyPlan, Add: p.Add, Change: p.Change,
			Destroy: p.Destroy, Import: p.Import, OutputChanges: p.OutputChanges, Changes: []jsonResourceChange{}}
		for _, c := range p.Changes {
			j.Plan.Changes = append(j.Plan.Changes, jsonResourceChange(c))
		}
	}
	if r.Outputs != nil {
		j.Outputs = map[string]jsonOutputValue{}
		for k, o := range r.Outputs {
			jo := jsonOutputValue{Type: o.Type, Sensitive: o.Sensitive}
			if !o.Sensitive {
				jo.Value = o.Value
			}
			j.Outputs[k] = jo
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j jsonResult
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{
		Unit: j.Unit, Status: j.Status, Err: stringErr(j.Error), Started: j.Started,
		Start: j.Start, End: j.End, SkippedFor: j.SkippedFor,
		Duration: seconds(j.Duration), LockWait: seconds(j.LockWait), InstanceLock: j.InstanceLock,
		Retries: j.Retries, Unchanged: j.Unchanged, InitSkipped: j.InitSkipped, HasChanges: j.HasChanges, Data: j.Data, Log: j.Log,
		MemoryPeak: j.MemoryPeak, MemoryWait: seconds(j.MemoryWait), CPUWait: seconds(j.CPUWait), OutOfMemory: j.OutOfMemory,
	}
	if l := j.StateLock; l != nil {
		r.StateLock = &StateLock{ID: l.ID, Path: l.Path, Operation: l.Operation, Who: l.Who, Version: l.Version, Created: l.Created, Info: l.Info}
	}
	if s := j.Summary; s != nil {
		r.Summary = &ChangeSummary{Add: s.Add, Change: s.Change, Destroy: s.Destroy, Import: s.Import}
	}
	for _, l := range j.Recovered {
		r.RecoveredLocks = append(r.RecoveredLocks, StateLock(l))
	}
	for _, c := range j.Crashed {
		r.Crashed = append(r.Crashed, CrashedRun{PID: c.PID, Host: c.Host, Command: c.Command, Started: c.Started,
			EnginePID: c.EnginePID, EngineOutput: c.EngineOutput, Waited: seconds(c.Waited), Killed: c.Killed})
	}
	if p := j.Plan; p != nil {
		r.Plan = &PlanSummary{File: p.File, JSONFile: p.JSONFile, RedactedJSONFile: p.RedactedJSONFile, DestroyPlan: p.DestroyPlan, Add: p.Add, Change: p.Change,
			Destroy: p.Destroy, Import: p.Import, OutputChanges: p.OutputChanges}
		for _, c := range p.Changes {
			r.Plan.Changes = append(r.Plan.Changes, ResourceChange(c))
		}
	}
	if j.Outputs != nil {
		r.Outputs = map[string]OutputValue{}
		for k, o := range j.Outputs {
			r.Outputs[k] = OutputValue(o)
		}
	}
	return nil
}

type jsonReport struct {
	Command  string         `json:"command"`
	Engine   jsonEngine     `json:"engine"`
	Duration float64        `json:"duration_seconds"`
	Counts   map[string]int `json:"counts"`
	Results  []Result       `json:"results"`
	Warnings []string       `json:"warnings,omitempty"`
}

type jsonEngine struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	Path    string `json:"path"`
}

// MarshalJSON gives the report's documented JSON form:
//
//	{"command": "apply",
//	 "engine": {"kind": "terraform", "version": "1.11.4", "path": "/usr/bin/terraform"},
//	 "duration_seconds": 42.1,
//	 "counts": {"succeeded": 11, "failed": 1},
//	 "results": [ ...each Result's form... ],
//	 "warnings": ["your CLI config: ..."]}
//
// counts holds every status that occurs; warnings is left out when empty.
func (r Report) MarshalJSON() ([]byte, error) {
	j := jsonReport{Command: r.Command, Engine: jsonEngine(r.Engine), Duration: r.Duration.Seconds(), Counts: map[string]int{}, Results: r.Results, Warnings: r.Warnings}
	if j.Results == nil {
		j.Results = []Result{}
	}
	for _, res := range r.Results {
		j.Counts[res.Status.String()]++
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (r *Report) UnmarshalJSON(b []byte) error {
	var j jsonReport
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Report{Command: j.Command, Engine: Engine(j.Engine), Duration: seconds(j.Duration), Results: j.Results, Warnings: j.Warnings}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func stringErr(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
