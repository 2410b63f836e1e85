package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// main runs the fleet, or the machine ci.go started this binary as.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runMachine(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// planJob is the plan job: every unit's plan saved and exported as a
// bundle into j.Artifact, and the apply fanned out into the CI matrix.
func planJob(ctx context.Context, j job, key []byte) (runner.FanOutPlan, error) {
	r, err := machine(j)
	if err != nil {
		return runner.FanOutPlan{}, err
	}
	units := fleetUnits(j.Env)
	for _, cmd := range []runner.Command{runner.SavePlan, runner.ExportPlan(j.Artifact, key)} {
		if _, err := r.Run(ctx, cmd, units...); err != nil {
			return runner.FanOutPlan{}, err
		}
	}
	waves, err := r.Order(runner.Apply, units...)
	if err != nil {
		return runner.FanOutPlan{}, err
	}
	return runner.FanOut(waves, 3)
}

// applyJob is one apply job: import its bundles, apply exactly them.
func applyJob(ctx context.Context, j job, key []byte, stdout io.Writer) error {
	r, err := machine(j)
	if err != nil {
		return err
	}
	units, only := fleetUnits(j.Env), runner.WithIDs(j.IDs...)
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

// mirror is the fleet's provider mirror and module server: a provider
// cache and a module store filled from upstream, served to the machines
// (yours: an http.Server with your certificate), the module server under
// /modules/.
func mirror(m job) (http.Handler, error) {
	upstream, err := m.Env.cacheOptions() // offline.go; yours: none, or your registry
	if err != nil {
		return nil, err
	}
	cache, err := pluginc.Open(filepath.Join(m.Root, "plugin-cache"), upstream...)
	if err != nil {
		return nil, err
	}
	modules, err := runner.ModuleServer(filepath.Join(m.Root, "module-store"), m.Env.serverOptions()...) // offline.go; yours: none
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", cache.MirrorHandler())
	mux.Handle("/modules/", http.StripPrefix("/modules", modules))
	return mux, nil
}

// machine is one CI machine's runner: its own workdirs, and its own
// provider cache and module store filled from the fleet's mirror and
// module server.
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
	return runner.New(runner.WithWorkdirs(wds), runner.WithPluginCache(cache), runner.WithTerraform(j.Env.Terraform),
		runner.WithModuleServer(j.Mirror+"modules/"))
}

// fleetUnits are the stack's VPC (which calls a registry module) and
// twelve clusters after it, every state in one backend every machine
// reaches, so a plan made on one is applied on another (ExportPlan
// refuses state local to a machine).
func fleetUnits(env *offline) (units []runner.Unit) {
	for i := range 13 {
		instance, source := fmt.Sprintf("elasticache/redis-cluster-%d", i), env.Source
		if i == 0 {
			instance, source = "network/vpc", env.VPCSource
		}
		name := "plat-ue2-dev-" + strings.ReplaceAll(instance, "/", "-")
		units = append(units, runner.Unit{ID: "plat-ue2-dev/" + instance, Workdir: workdir.Spec{
			Stack: "plat-ue2-dev", Instance: instance, Source: source, Files: map[string][]byte{
				"backend.tf.json":            env.backend(name), // offline.go; yours: S3, say
				"terraform.auto.tfvars.json": fmt.Appendf(nil, `{"name": %q, "latency_seconds": 0}`, name)}},
			Env: env.engineEnv()}) // offline.go; yours: none
		if i > 0 {
			units[i].DependsOn = []string{units[0].ID}
		}
	}
	return units
}
