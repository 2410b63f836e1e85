package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// childConfig tells a re-executed test binary what to run.
type childConfig struct {
	TF, Root, Cache string
	Spec            workdir.Spec
	Command         string // "apply" (the default) or "apply-plan"
}

// childResult is what a child prints on its last stdout line.
type childResult struct {
	Status   string
	LockWait int64
	Holder   *workdir.Holder // Result.InstanceLock
	Err      string
}

// childConfigEnv carries a child's config, as JSON: a childConfig, a
// memoryChild or a backendsChildConfig, by role.
const childConfigEnv = "TFISOLATE_RUNNER_CHILD_CONFIG"

// childTimeout bounds every child of these tests, past the children's own
// bounds (the backends child's 4-minute run, runIn's 5 minutes): it only
// keeps a broken test from hanging.
const childTimeout = 6 * time.Minute

// child is the body of a re-executed test binary acting as another OS
// process (see childproc), by role.
func child(role string) error {
	switch role {
	case "apply":
		return applyChild()
	case memoryChildRole:
		return runMemoryChild()
	case backendsChildRole:
		return backendsChild()
	}
	return fmt.Errorf("unknown child role %q", role)
}

// readChildConfig decodes the child's config, from childConfigEnv, into
// cfg.
func readChildConfig(cfg any) error {
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), cfg); err != nil {
		return fmt.Errorf("bad child config: %w", err)
	}
	return nil
}

// openChildStores opens a child's workdir root and plugin cache.
func openChildStores(root, cache string, opts ...workdir.Option) (*workdir.Manager, *pluginc.Cache, error) {
	wd, err := workdir.New(root, opts...)
	if err != nil {
		return nil, nil, err
	}
	c, err := pluginc.Open(cache)
	if err != nil {
		return nil, nil, err
	}
	return wd, c, nil
}

// applyChild runs the childConfig's command over its one unit and prints
// a childResult on its last stdout line.
func applyChild() error {
	var cfg childConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	// The workdir manager logs to stderr, where the parent watches for the
	// moment this process starts waiting for the instance lock.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	wd, cache, err := openChildStores(cfg.Root, cfg.Cache, workdir.WithLogger(log))
	if err != nil {
		return err
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF))
	if err != nil {
		return err
	}
	cmd := Apply
	if cfg.Command == ApplyPlan.String() {
		cmd = ApplyPlan
	}
	rep, err := r.Run(context.Background(), cmd, Unit{Workdir: cfg.Spec})
	res := childResult{}
	if rep != nil {
		res.Status = rep.Results[0].Status.String()
		res.LockWait = int64(rep.Results[0].LockWait)
		res.Holder = rep.Results[0].InstanceLock
	}
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Printf("\n%s\n", b)
	return err
}

// backendsChildRole makes the test binary a second CI agent (see
// backendsChild).
const backendsChildRole = "backends"

// backendsChildResultPrefix starts the child's stdout line with its results.
const backendsChildResultPrefix = "backends-child-results: "

type backendsChildUnit struct {
	Spec workdir.Spec
	Env  map[string]string
}

type backendsChildConfig struct {
	TF, Root, Cache string
	LockTimeout     time.Duration
	Units           []backendsChildUnit
}

type backendsChildResult struct {
	Unit, Status, Err, Log string
	LockWait               time.Duration
}

// backendsChild plays a second CI agent: it applies the units of its
// backendsChildConfig with its own workdir root and plugin cache, writes
// the combined output to stderr (where the parent watches it) and prints
// one line of results.
func backendsChild() error {
	var cfg backendsChildConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	wd, cache, err := openChildStores(cfg.Root, cfg.Cache)
	if err != nil {
		return err
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF),
		WithLockTimeout(cfg.LockTimeout), WithOutput(os.Stderr))
	if err != nil {
		return err
	}
	units := make([]Unit, len(cfg.Units))
	for i, u := range cfg.Units {
		units[i] = Unit{Workdir: u.Spec, Env: u.Env}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := r.Run(ctx, Apply, units...)
	if rep == nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	var out []backendsChildResult
	for _, res := range rep.Results {
		cr := backendsChildResult{Unit: res.Unit, Status: res.Status.String(), Log: res.Log, LockWait: res.LockWait}
		if res.Err != nil {
			cr.Err = res.Err.Error()
		}
		out = append(out, cr)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Printf("\n%s%s\n", backendsChildResultPrefix, b)
	return nil
}
