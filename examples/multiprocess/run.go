package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// outcome is everything the example found out; -json prints it.
type outcome struct {
	Root        string          `json:"root"`
	ColdCache   bool            `json:"cold_cache"`
	Downloads   int             `json:"provider_downloads"` // packages the registry served
	Processes   []procResult    `json:"processes"`
	Instances   []instanceState `json:"instances"`
	WallSeconds float64         `json:"wall_seconds"`
}

// ok says whether every process applied all its instances and every
// instance's state holds its resources.
func (o *outcome) ok() bool {
	for _, p := range o.Processes {
		if p.Error != "" || p.Report == nil || p.Report.Count(runner.Succeeded) != len(p.Report.Results) {
			return false
		}
	}
	for _, s := range o.Instances {
		if s.Error != "" || len(s.Resources) == 0 {
			return false
		}
	}
	return true
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	// With -json, stdout carries only the outcome; the story goes to stderr.
	say := stdout
	if o.json {
		say = os.Stderr
	}
	fmt.Fprintf(say, "root: %s\n", o.root)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable to start workers: %w", err)
	}
	// The offline stand-in (offline.go): terraform, the component, the registry.
	env, err := startOffline(ctx, o.root, o.padding)
	if err != nil {
		return err
	}
	defer env.close()
	cacheDir := filepath.Join(o.root, "plugin-cache")
	wdRoot := filepath.Join(o.root, "workdirs")
	out := &outcome{Root: o.root, ColdCache: isEmptyDir(cacheDir)}

	cfgs := make([]workerConfig, o.procs)
	for p := range cfgs {
		cfgs[p] = workerConfig{
			Process: p + 1, Terraform: env.terraform, Source: env.source, Workdirs: wdRoot, Cache: cacheDir,
			LogDir:    filepath.Join(o.root, "logs", fmt.Sprintf("proc-%d", p+1)),
			Registry:  env.registry,
			Instances: o.instances(p), Latency: o.latency, Parallelism: o.parallelism,
		}
		fmt.Fprintf(say, "process %d applies %s\n", p+1, instanceRange(cfgs[p].Instances))
	}
	fmt.Fprintf(say, "%d processes share one provider cache (%s) and one workdir root (%s)\n", o.procs, cacheDir, wdRoot)

	before := env.downloads()
	start := time.Now()
	out.Processes = startWorkers(ctx, exe, cfgs, say)
	out.WallSeconds = time.Since(start).Seconds()
	out.Downloads = env.downloads() - before

	wds, err := workdir.New(wdRoot)
	if err != nil {
		return err
	}
	applied := map[int][]int{}
	for _, c := range cfgs {
		for _, i := range c.Instances {
			applied[i] = append(applied[i], c.Process)
		}
	}
	nums := make([]int, 0, len(applied))
	for i := range applied {
		nums = append(nums, i)
	}
	slices.Sort(nums)
	for _, i := range nums {
		st := readState(ctx, wds, env.source, i, o.latency)
		st.Processes = applied[i]
		out.Instances = append(out.Instances, st)
	}

	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printOutcome(stdout, out)
	}
	if !out.ok() {
		return fmt.Errorf("not every process and instance succeeded")
	}
	return nil
}

func isEmptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}

func instanceRange(nums []int) string {
	if len(nums) == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%s .. %s", instance(nums[0]), instance(nums[len(nums)-1]))
}
