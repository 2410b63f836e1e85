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

// jobEnv carries an apply job's orders and makes a process one; keyEnv
// carries the bundles' HMAC key (a CI secret in a real fleet).
const jobEnv, keyEnv = "TFISOLATE_EXAMPLE_FLEET_JOB", "TFISOLATE_EXAMPLE_FLEET_KEY"

// job is what the CI system tells an apply job: its machine's own root,
// where it downloaded the artifact, the shared backend, its matrix cell.
type job struct {
	Root, Artifact, State string
	IDs                   []string
	Env                   *offline // offline.go's stand-ins
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
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// run is the fleet: the plan job, the artifact, the apply jobs wave by
// wave.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	rootFlag := fs.String("root", "", "where the machines' roots live (default: the user cache dir)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("usage: fleet [-root DIR], not %q", args)
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
	start, state, bundles, artifact := time.Now(), filepath.Join(root, "state"), filepath.Join(root, "a", "bundles"), filepath.Join(root, "artifact")
	units, key := fleetUnits(state, env), make([]byte, 32)
	_, _ = rand.Read(key) // never fails
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}

	// The plan job on A: plans, their bundles and the matrix.
	a, err := machine(filepath.Join(root, "a"), env)
	if err != nil {
		return err
	}
	for _, cmd := range []runner.Command{runner.SavePlan, runner.ExportPlan(bundles, key)} {
		if _, err := a.Run(ctx, cmd, units...); err != nil {
			return fmt.Errorf("plan job: %w", err)
		}
	}
	waves, err := a.Order(runner.Apply, units...)
	if err != nil {
		return err
	}
	fan, err := runner.FanOut(waves, 3)
	if err != nil {
		return err
	}
	matrix, _ := json.Marshal(fan) // a FanOutPlan always marshals
	fmt.Fprintf(stdout, "plan job: %d bundles; matrix %s\n", len(units), matrix)

	// The artifact: uploaded by the plan job, downloaded by the apply jobs.
	if err := os.RemoveAll(artifact); err != nil {
		return err
	}
	if err := errors.Join(os.Mkdir(artifact, 0o700), os.CopyFS(artifact, os.DirFS(bundles))); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}

	// The apply jobs: a wave's jobs at once, each a process of its own.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for w, wave := range fan.Waves {
		n := len(wave.Jobs)
		out, errs, spans := make([]bytes.Buffer, n), make([]error, n), make([][2]time.Duration, n)
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
			fmt.Fprintf(stdout, "wave %d job %d: %d units, ran %s-%s\n", w+1, j+1, len(ids), spans[j][0].Round(time.Millisecond), spans[j][1].Round(time.Millisecond))
			for line := range strings.Lines(out[j].String()) {
				fmt.Fprintf(stdout, "wave %d job %d: %s", w+1, j+1, line)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("wave %d: %w", w+1, err)
		}
	}

	fmt.Fprintf(stdout, "fleet: every job succeeded, every state in %s; %d provider downloads upstream; %s\n",
		state, env.downloads(), time.Since(start).Round(time.Millisecond))
	return nil
}

// applyJob is one apply job: import its bundles, apply exactly them.
func applyJob(ctx context.Context, spec string, stdout io.Writer) error {
	var j job
	key, err := hex.DecodeString(os.Getenv(keyEnv))
	if jerr := json.Unmarshal([]byte(spec), &j); jerr != nil || j.Env == nil || err != nil || len(key) == 0 {
		return fmt.Errorf("want a job's JSON in %s and the plan key in hex in %s", jobEnv, keyEnv)
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
	if rep == nil {
		return err
	}
	for _, res := range rep.Results {
		fmt.Fprintf(stdout, "pid %d: %s %s, changed: %t\n", os.Getpid(), res.Unit, res.Status, res.HasChanges)
	}
	return err
}

// machine is one CI machine's runner, with its own workdirs and cache.
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

// fleetUnits are the stack's VPC and twelve clusters after it, every
// state in the shared backend at dir.
func fleetUnits(dir string, env *offline) (units []runner.Unit) {
	for i := range 13 {
		instance, source := fmt.Sprintf("elasticache/redis-cluster-%d", i), env.Source
		if i == 0 {
			instance, source = "network/vpc", env.VPCSource
		}
		name := "plat-ue2-dev-" + strings.ReplaceAll(instance, "/", "-")
		backend, _ := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{
			"local": map[string]string{"path": filepath.Join(dir, name+".tfstate")}}}})
		units = append(units, runner.Unit{ID: "plat-ue2-dev/" + instance, Workdir: workdir.Spec{
			Stack: "plat-ue2-dev", Instance: instance, Source: source, Files: map[string][]byte{
				"backend.tf.json":            backend,
				"terraform.auto.tfvars.json": fmt.Appendf(nil, `{"name": %q, "latency_seconds": 0}`, name)}}})
		if i > 0 {
			units[i].DependsOn = []string{units[0].ID}
		}
	}
	return units
}
