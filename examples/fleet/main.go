package main

import (
	"bufio"
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

// jobEnv and mirrorEnv carry a process's orders and make it an apply job
// or the mirror; keyEnv carries the bundles' HMAC key (a CI secret).
const (
	jobEnv    = "TFISOLATE_EXAMPLE_FLEET_JOB"
	mirrorEnv = "TFISOLATE_EXAMPLE_FLEET_MIRROR"
	keyEnv    = "TFISOLATE_EXAMPLE_FLEET_KEY"
)

// job is what the CI system tells a machine: its own root, the fleet's
// provider mirror, where the artifact is, the shared backend, its IDs.
type job struct {
	Root, Mirror, MirrorCert, Artifact, State string
	IDs                                       []string
	Env                                       *offline // offline.go's stand-ins
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if spec, ok := os.LookupEnv(mirrorEnv); ok {
		err = serveMirror(spec, os.Stdin, os.Stdout)
	} else if spec, ok := os.LookupEnv(jobEnv); ok {
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

// run is the fleet: the mirror, the plan job, the artifact, the apply
// jobs wave by wave.
func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
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

	exe, err := os.Executable()
	if err != nil {
		return err
	}

	// The provider mirror: the only machine that downloads from upstream.
	m := job{Root: filepath.Join(root, "mirror"), MirrorCert: filepath.Join(root, "mirror.pem"), Env: env}
	spec, _ := json.Marshal(m)
	mirror := exec.CommandContext(ctx, exe)
	mirror.Env, mirror.Stderr = append(os.Environ(), mirrorEnv+"="+string(spec)), os.Stderr
	stopMirror, err := mirror.StdinPipe() // closed: the fleet is done
	if err != nil {
		return err
	}
	mirrorOut, err := mirror.StdoutPipe()
	if err != nil {
		return err
	}
	if err := mirror.Start(); err != nil {
		return fmt.Errorf("start the mirror: %w", err)
	}
	defer func() { err = errors.Join(err, stopMirror.Close(), mirror.Wait()) }()
	if m.Mirror, err = bufio.NewReader(mirrorOut).ReadString('\n'); err != nil {
		return fmt.Errorf("the mirror said no URL: %w", err)
	}
	m.Mirror = strings.TrimSpace(m.Mirror)
	fmt.Fprintf(stdout, "mirror: pid %d serves the provider cache at %s\n", mirror.Process.Pid, m.Mirror)

	// The plan job on A: plans, their bundles and the matrix.
	m.Root = filepath.Join(root, "a")
	a, err := machine(m)
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
	for w, wave := range fan.Waves {
		n := len(wave.Jobs)
		out, errs, spans := make([]bytes.Buffer, n), make([]error, n), make([][2]time.Duration, n)
		var wg sync.WaitGroup
		for j, ids := range wave.Jobs {
			spec, _ := json.Marshal(job{filepath.Join(root, fmt.Sprintf("wave%d-job%d", w+1, j+1)), m.Mirror, m.MirrorCert, artifact, state, ids, env})
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
	r, err := machine(j)
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

// serveMirror is the fleet's provider mirror: a cache filled from
// upstream, served to the machines until stop closes.
func serveMirror(spec string, stop io.Reader, stdout io.Writer) error {
	var m job
	if err := json.Unmarshal([]byte(spec), &m); err != nil || m.Env == nil {
		return fmt.Errorf("want the mirror's JSON in %s: %v", mirrorEnv, err)
	}
	upstream, err := m.Env.cacheOptions() // offline.go; yours: none, or your registry
	if err != nil {
		return err
	}
	cache, err := pluginc.Open(filepath.Join(m.Root, "plugin-cache"), upstream...)
	if err != nil {
		return err
	}
	url, closeMirror, err := serveTLS(cache.MirrorHandler(), m.MirrorCert) // offline.go; yours: http.ListenAndServeTLS
	if err != nil {
		return err
	}
	defer closeMirror()
	fmt.Fprintln(stdout, url)
	_, err = io.Copy(io.Discard, stop)
	return err
}

// machine is one CI machine's runner: its own workdirs, and its own cache
// filled from the fleet's mirror.
func machine(j job) (*runner.Runner, error) {
	opts, err := mirrorOptions(j.Mirror, j.MirrorCert) // offline.go; yours: pluginc.WithSource(pluginc.NetworkMirror(url))
	if err != nil {
		return nil, err
	}
	cache, err := pluginc.Open(filepath.Join(j.Root, "plugin-cache"), opts...)
	if err != nil {
		return nil, err
	}
	wds, err := workdir.New(filepath.Join(j.Root, "workdirs"))
	if err != nil {
		return nil, err
	}
	return runner.New(runner.WithWorkdirs(wds), runner.WithPluginCache(cache), runner.WithTerraform(j.Env.Terraform))
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
