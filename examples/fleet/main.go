// Command fleet is a CI fleet simulated on one machine, offline. A plan
// job on machine A saves and exports the plans of a VPC and twelve
// clusters placed after it as plan bundles and fans the apply out
// (runner.FanOut); the bundles travel as an artifact; each wave's apply
// jobs run at once, each a process of its own (this binary, re-executed)
// with its own workdir root and provider cache, importing its bundles and
// applying exactly them. Every state lives in one shared backend (a local
// path here, S3 or another remote backend in a real fleet), which machine
// A finally reads every output back from.
//
// A cluster needs nothing of the VPC's apply to be planned: what a unit's
// plan reads from a dependency's outputs exists only once that dependency
// is applied, so such a unit is planned in a later plan job.
//
// offline.go is the stand-in that serves a small provider from a loopback
// registry: delete it when copying, and name your own registry.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// jobEnv holds an apply job's orders (JSON); keyEnv the bundles' HMAC key,
// a CI secret in a real fleet. jobEnv makes a process an apply job.
const (
	jobEnv = "TFISOLATE_EXAMPLE_FLEET_JOB"
	keyEnv = "TFISOLATE_EXAMPLE_FLEET_KEY"
)

// job is what the CI system tells one apply job.
type job struct {
	Root     string   `json:"root"`     // the machine's own root
	Artifact string   `json:"artifact"` // where the bundles were downloaded
	State    string   `json:"state"`    // the shared backend
	IDs      []string `json:"ids"`      // its cell of the matrix
	Env      *offline `json:"env"`      // offline.go's stand-ins
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if spec, ok := os.LookupEnv(jobEnv); ok {
		err = applyJob(ctx, spec, os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout)
	}
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fleet:", err)
		}
		os.Exit(1)
	}
}

// run is the fleet: the plan job, the artifact, the apply jobs wave by
// wave, then every output read back from the shared state.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	rootFlag := fs.String("root", "", "where the machines' roots live (default: the user cache dir)")
	jobs := fs.Int("jobs", 3, "apply jobs per wave")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *jobs < 1 {
		return fmt.Errorf("usage: fleet [-root DIR] [-jobs N>0], not %q", args)
	}
	root, err := resolveRoot(*rootFlag)
	if err != nil {
		return err
	}
	env, err := startOffline(ctx, root)
	if err != nil {
		return err
	}
	defer env.close()
	start, state := time.Now(), filepath.Join(root, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}

	// The plan job, on machine A.
	a, err := machine(filepath.Join(root, "a"), env)
	if err != nil {
		return err
	}
	units, key := fleetUnits(state, env), make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	bundles := filepath.Join(root, "a", "bundles")
	for _, cmd := range []runner.Command{runner.SavePlan, runner.ExportPlan(bundles, key)} {
		if _, err := a.Run(ctx, cmd, units...); err != nil {
			return fmt.Errorf("plan job: %w", err)
		}
	}
	waves, err := a.Order(runner.Apply, units...)
	if err != nil {
		return err
	}
	fan, err := runner.FanOut(waves, *jobs)
	if err != nil {
		return err
	}
	matrix, _ := json.Marshal(fan) // a FanOutPlan always marshals
	fmt.Fprintf(stdout, "plan job: %d bundles; matrix %s\n", len(units), matrix)

	// The artifact: the CI system uploads the bundles and every apply job
	// downloads them.
	artifact := filepath.Join(root, "artifact")
	if err := errors.Join(os.RemoveAll(artifact), os.Mkdir(artifact, 0o700), os.CopyFS(artifact, os.DirFS(bundles))); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}

	// The apply jobs: a wave's jobs at once, each a process of its own.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for w, wave := range fan.Waves {
		out, errs := make([]bytes.Buffer, len(wave.Jobs)), make([]error, len(wave.Jobs))
		spans := make([][2]time.Duration, len(wave.Jobs))
		var wg sync.WaitGroup
		for j, ids := range wave.Jobs {
			spec, _ := json.Marshal(job{filepath.Join(root, fmt.Sprintf("wave%d-job%d", w+1, j+1)), artifact, state, ids, env})
			cmd := exec.CommandContext(ctx, exe)
			cmd.Env = append(os.Environ(), jobEnv+"="+string(spec), keyEnv+"="+hex.EncodeToString(key))
			cmd.Stdout, cmd.Stderr = &out[j], &out[j]
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // terraform stops cleanly
			cmd.WaitDelay = time.Minute
			wg.Go(func() {
				spans[j][0] = time.Since(start)
				errs[j] = cmd.Run()
				spans[j][1] = time.Since(start)
			})
		}
		wg.Wait()
		for j, ids := range wave.Jobs {
			fmt.Fprintf(stdout, "wave %d job %d: %d units, ran %s-%s\n", w+1, j+1, len(ids),
				spans[j][0].Round(time.Millisecond), spans[j][1].Round(time.Millisecond))
			for line := range strings.Lines(out[j].String()) {
				fmt.Fprintf(stdout, "wave %d job %d: %s", w+1, j+1, line)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("wave %d: %w", w+1, err)
		}
	}

	// Machine A never applied anything, yet reads every output back.
	rep, err := a.Run(ctx, runner.Output, units...)
	if err != nil {
		return err
	}
	ok := 0
	for _, res := range rep.Results {
		if len(res.Outputs) > 0 {
			ok++
		}
	}
	fmt.Fprintf(stdout, "fleet: outputs of %d/%d units read back on A from the shared state; %d provider downloads upstream; %s\n",
		ok, len(units), env.downloads(), time.Since(start).Round(time.Millisecond))
	return nil
}

// applyJob is one apply job: import its bundles, apply exactly them.
func applyJob(ctx context.Context, spec string, stdout io.Writer) error {
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil || j.Env == nil {
		return fmt.Errorf("%s: want a job's JSON: %v", jobEnv, err)
	}
	key, err := hex.DecodeString(os.Getenv(keyEnv))
	if err != nil || len(key) == 0 {
		return fmt.Errorf("%s: want the plan key in hex", keyEnv)
	}
	r, err := machine(j.Root, j.Env)
	if err != nil {
		return err
	}
	units, only := fleetUnits(j.State, j.Env), runner.WithIDs(j.IDs...)
	if _, err := r.RunWith(ctx, runner.ImportPlan(j.Artifact, key), units, only); err != nil {
		return err
	}
	rep, err := r.RunWith(ctx, runner.ApplyPlan, units, only)
	if rep != nil {
		for _, res := range rep.Results {
			fmt.Fprintf(stdout, "pid %d: %s %s, changed: %t\n", os.Getpid(), res.Unit, res.Status, res.HasChanges)
		}
	}
	return err
}

// machine is one CI machine's runner: its own workdir root and cache.
func machine(root string, env *offline) (*runner.Runner, error) {
	opts, err := env.cacheOptions()
	if err != nil {
		return nil, err
	}
	cache, err := pluginc.Open(filepath.Join(root, "plugin-cache"), opts...)
	if err != nil {
		return nil, err
	}
	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	if err != nil {
		return nil, err
	}
	return runner.New(runner.WithWorkdirs(wds), runner.WithPluginCache(cache), runner.WithTerraform(env.Terraform))
}

// fleetUnits are the stack's VPC and twelve clusters, each cluster after
// the VPC, every state in the shared backend at dir.
func fleetUnits(dir string, env *offline) []runner.Unit {
	unit := func(instance, source string) runner.Unit {
		name := "plat-ue2-dev-" + strings.ReplaceAll(instance, "/", "-")
		backend, _ := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{
			"local": map[string]string{"path": filepath.Join(dir, name+".tfstate")}}}})
		return runner.Unit{ID: "plat-ue2-dev/" + instance, Workdir: workdir.Spec{
			Stack: "plat-ue2-dev", Instance: instance, Source: source, Files: map[string][]byte{
				"backend.tf.json":            backend,
				"terraform.auto.tfvars.json": fmt.Appendf(nil, `{"name": %q, "latency_seconds": 0}`, name),
			}}}
	}
	units := []runner.Unit{unit("network/vpc", env.VPCSource)}
	for i := 1; i <= 12; i++ {
		u := unit(fmt.Sprintf("elasticache/redis-cluster-%d", i), env.Source)
		u.DependsOn = []string{units[0].ID}
		units = append(units, u)
	}
	return units
}
