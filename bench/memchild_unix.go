//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/harness/naive"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The memory section runs each approach in a child: this same executable
// (the bench, or its test binary) started with memChildEnv set. The child
// joins the section's memory cgroup before it starts anything, so the
// approach and every process it starts are in the cgroup, while the bench
// itself (the loopback registry, the provider packages it serves from
// memory) stays out of it: the kernel's limit then bears on what an
// approach really needs, and the bench cannot be its OOM victim.
const memChildEnv = "TFISOLATE_BENCH_MEMORY_CHILD"

// The child's mode is chosen in init, before main or a test binary's
// TestMain, so the bench and its tests re-execute themselves alike.
func init() {
	if _, ok := os.LookupEnv(memChildEnv); !ok {
		return
	}
	if err := memChild(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: memory child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Approaches a memory child runs.
const (
	memTfisolate         = "tfisolate"          // the runner, its budget read from the cgroup
	memTfisolateNoBudget = "tfisolate-nobudget" // the runner at parallelism N, no budget
	memWorkaround        = "workaround"         // internal/harness/naive Preinit
	memTofu              = "tofu"               // OpenTofu init + apply, N at once
)

// memChildSpec is what the bench hands a memory child on its stdin: the
// approach and what its rows in peers_unix.go take from the env and the
// provGroup, which the child cannot have (the registry is the bench's).
type memChildSpec struct {
	Approach string
	Cgroup   string // the memory cgroup's directory; the child joins it
	Result   string // where the child writes its memChildResult
	Dir      string // the approach's scratch dir
	N        int    // units, all at once

	Terraform, Tofu string
	Infra, Source   string   // env.infra, env.source
	EngineEnv       []string // provGroup.engineEnv(): what terraform and tofu run with

	// The loopback registry: host, address and CA, for tfisolate's
	// provider cache (pluginc) and terraform's network mirror.
	RegistryHost, RegistryAddr string
	RegistryCA                 []byte
	CLIConfig                  []byte // terraform's, for the workaround

	PluginCache string // tfisolate's warm provider cache
	TFCache     string // terraform's warm plugin cache
	TFLock      []byte
	TofuRC      string // OpenTofu's CLI config
	TofuCache   string // its warm plugin cache
	TofuLock    []byte
}

// memChildResult is what a memory child reports: the approach's units
// that succeeded, its wall time, and its failures by message.
type memChildResult struct {
	N, OK int
	Wall  time.Duration
	Errs  map[string]int
}

// memChild is the child's whole life: read the spec, join the cgroup,
// run the approach, write the result.
func memChild() error {
	// What the child starts must not take itself for a child.
	if err := os.Unsetenv(memChildEnv); err != nil {
		return err
	}
	var spec memChildSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return fmt.Errorf("read the spec on stdin: %w", err)
	}
	if spec.Cgroup == "" || spec.Result == "" || spec.N < 1 {
		// Not the whole spec: its engine environment is the bench's own.
		return fmt.Errorf("spec: cgroup %q, result %q, %d units: want a cgroup, a result file and at least one unit", spec.Cgroup, spec.Result, spec.N)
	}
	if err := os.WriteFile(filepath.Join(spec.Cgroup, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("join the memory cgroup %s: %w", spec.Cgroup, err)
	}
	// The bench stops a child with SIGINT (its context's end): the
	// approach then stops its engines as it would for a user's ^C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return err
	}
	var r *memChildResult
	var err error
	switch spec.Approach {
	case memTfisolate, memTfisolateNoBudget:
		r, err = spec.tfisolate(ctx)
	case memWorkaround:
		r, err = spec.workaround(ctx)
	case memTofu:
		r, err = spec.tofu(ctx)
	default:
		return fmt.Errorf("spec: unknown approach %q", spec.Approach)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Approach, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(spec.Result, b, 0o644)
}

// tfisolate is tfisolateRow without the timing wrapper (the memory table
// does not split a unit's time): a runner over fresh workdirs, the
// shared provider cache, parallelism N.
func (spec *memChildSpec) tfisolate(ctx context.Context) (*memChildResult, error) {
	client, err := testregistry.NewClient(spec.RegistryHost, spec.RegistryAddr, spec.RegistryCA)
	if err != nil {
		return nil, err
	}
	cache, err := pluginc.Open(spec.PluginCache, pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(client))
	if err != nil {
		return nil, err
	}
	wds, err := workdir.New(filepath.Join(spec.Dir, "workdirs"))
	if err != nil {
		return nil, err
	}
	opts := []runner.Option{
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(spec.Terraform),
		runner.WithParallelism(spec.N),
	}
	if spec.Approach == memTfisolateNoBudget {
		opts = append(opts, runner.WithMemoryBudget(runner.NoMemoryBudget))
	}
	rn, err := runner.New(opts...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep, err := rn.Run(ctx, runner.Apply, demo.Units(spec.Source, spec.N, 0)...)
	wall := time.Since(start)
	if rep == nil {
		return nil, err
	}
	r := &memChildResult{N: len(rep.Results), Wall: wall, Errs: map[string]int{}}
	for _, res := range rep.Results {
		if res.Status == runner.Succeeded {
			r.OK++
			continue
		}
		r.Errs[firstLine(fmt.Sprint(res.Err))]++
	}
	return r, ctx.Err()
}

// workaround is workaroundRow's cold pass.
func (spec *memChildSpec) workaround(ctx context.Context) (*memChildResult, error) {
	cfg := naive.Config{
		Terraform:      spec.Terraform,
		Source:         spec.Infra,
		Component:      demo.Component,
		Scratch:        spec.Dir,
		Instances:      spec.N,
		Command:        "apply",
		CLIConfig:      spec.CLIConfig,
		Env:            spec.EngineEnv,
		Vars:           func(i int) []byte { return demo.VarsJSON(i+1, 0) },
		Files:          func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
		PluginCacheDir: spec.TFCache,
		LockFile:       spec.TFLock,
	}
	res, err := naive.Run(ctx, cfg, naive.Preinit)
	if err != nil {
		return nil, err
	}
	r := &memChildResult{N: spec.N, OK: res.Succeeded, Wall: res.Wall, Errs: map[string]int{}}
	for _, oc := range res.Outcomes {
		switch {
		case len(oc.ErrorLines) > 0:
			r.Errs[errorKey(oc.ErrorLines)]++
		case oc.Err != nil:
			r.Errs[firstLine(oc.Err.Error())]++
		}
	}
	return r, ctx.Err()
}

// tofu is tofuRow's cold pass: a copy of the component per instance with
// the lock file tofu wrote, then init + apply of every instance at once.
func (spec *memChildSpec) tofu(ctx context.Context) (*memChildResult, error) {
	if spec.Tofu == "" {
		return nil, errors.New("spec: no OpenTofu binary")
	}
	e := &env{infra: spec.Infra} // what instanceDir needs
	comps := make([]string, spec.N)
	envs := make([][]string, spec.N)
	for i := range spec.N {
		inst := filepath.Join(spec.Dir, fmt.Sprint(i+1))
		var err error
		if comps[i], err = e.instanceDir(filepath.Join(inst, "src"), i+1, 0, spec.TofuLock); err != nil {
			return nil, err
		}
		envs[i] = append(append([]string(nil), spec.EngineEnv...),
			"TF_CLI_CONFIG_FILE="+spec.TofuRC, "TF_PLUGIN_CACHE_DIR="+spec.TofuCache, "TF_DATA_DIR="+filepath.Join(inst, "data"))
	}
	r := &memChildResult{N: spec.N, Errs: map[string]int{}}
	var mu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	for i := range spec.N {
		wg.Go(func() {
			_, err := runProc(ctx, spec.Tofu, comps[i], envs[i], "init", "-input=false", "-no-color")
			if err == nil {
				_, err = runProc(ctx, spec.Tofu, comps[i], envs[i], "apply", "-input=false", "-auto-approve", "-no-color")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.Errs[tofuErrorKey(err)]++
				return
			}
			r.OK++
		})
	}
	wg.Wait()
	r.Wall = time.Since(start)
	return r, ctx.Err()
}
