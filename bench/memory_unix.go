//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider/provider"
)

// memChildTimeout bounds one approach's child: far above what N units of
// a one-second apply take, it only keeps a stuck row from hanging the bench.
const memChildTimeout = 30 * time.Minute

// memorySection is issue 16's memory scenario: -memory-n units whose
// provider holds -memory-provider-mib MiB resident, applied inside a
// memory cgroup limited to -memory-limit (below n times a unit's size),
// by tfisolate with its budget (read from the cgroup), tfisolate at a
// fixed parallelism of n with no budget, the hand-written workaround and
// OpenTofu (both n at once). Each approach runs in a child process of its
// own (memchild_unix.go) that joins the cgroup first, so every process
// the approach starts is in it; the bench itself stays out, with the
// registry it serves from memory.
func (e *env) memorySection(ctx context.Context, out io.Writer) error {
	o := e.o
	fmt.Fprintf(out, "\n## Memory: %d units of a provider holding %d MiB, in a %s memory cgroup\n\n", o.memN, o.memMiB, mib(o.memLimit))
	fmt.Fprint(out, memoryIntro)
	tofuBin, _, tofuErr := "", "", error(nil)
	if o.skipped(nameTofu) {
		tofuErr = fmt.Errorf("-skip %s", nameTofu)
	} else {
		tofuBin, _, tofuErr = e.findTofu(ctx)
	}
	g, err := e.setupGroup(ctx, o.padding, tofuBin)
	if err != nil {
		return fmt.Errorf("memory section: %w", err)
	}
	cg, err := makeCgroup(o.memLimit)
	if err != nil {
		fmt.Fprintf(out, "\nSkipped: %v.\n", err)
		return nil
	}
	defer func() {
		if rerr := cg.remove(); rerr != nil {
			fmt.Fprintf(e.log, "bench: memory: %v\n", rerr)
		}
	}()
	// The provider allocates when terraform configures it; the children,
	// terraform, tofu and the runner pass their environment on.
	// It holds the call a second, as a slow cloud API would: the units'
	// memory overlaps as it does when they wait on the cloud together.
	alloc := []string{provider.AllocEnv + "=" + strconv.Itoa(o.memMiB), provider.AllocHoldEnv + "=1s"}
	dir := filepath.Join(g.dir, nameMemory)
	base := memChildSpec{
		Cgroup: cg.dir, N: o.memN,
		Terraform: e.tf, Tofu: tofuBin, Infra: e.infra, Source: e.source,
		EngineEnv:    g.engineEnv(alloc...),
		RegistryHost: g.prov.Host(), RegistryAddr: g.prov.Addr(), RegistryCA: g.prov.CAPEM(),
		CLIConfig:   g.prov.TerraformCLIConfig(),
		PluginCache: g.pcDir, TFCache: g.tfCache, TFLock: g.tfLock,
		TofuRC: g.tofuRC, TofuCache: g.tofuCache, TofuLock: g.tofuLock,
	}
	approaches := []struct{ label, name string }{
		{"tfisolate (memory budget)", memTfisolate},
		{fmt.Sprintf("tfisolate (parallelism %d, no budget)", o.memN), memTfisolateNoBudget},
		{"workaround", memWorkaround},
	}
	if tofuBin != "" {
		approaches = append(approaches, struct{ label, name string }{"OpenTofu", memTofu})
	}
	var rows [][]string
	for _, a := range approaches {
		if err := ctx.Err(); err != nil {
			return err
		}
		spec := base
		spec.Approach, spec.Dir = a.name, filepath.Join(dir, a.name)
		spec.Result = spec.Dir + ".result.json"
		fmt.Fprintf(e.log, "bench: memory: %s...\n", a.label)
		k0 := cg.kills()
		r, peak, err := e.runMemChild(ctx, spec, alloc)
		if err != nil {
			return fmt.Errorf("memory section, %s: %w", a.label, err)
		}
		kills := cg.kills() - k0
		rows = append(rows, []string{a.label, fmt.Sprintf("%d/%d", r.OK, r.N), strconv.FormatInt(kills, 10), secs(r.Wall), mib(peak)})
		fmt.Fprintf(e.log, "bench: memory: %s: %d/%d succeeded, %d OOM kills, %s, peak %s\n", a.label, r.OK, r.N, kills, secs(r.Wall), mib(peak))
		for msg, n := range r.Errs {
			fmt.Fprintf(e.log, "bench: memory:   %d x %s\n", n, firstLine(msg))
		}
	}
	if tofuBin == "" {
		rows = append(rows, []string{"OpenTofu", "skipped: " + tofuErr.Error(), "", "", ""})
	}
	fmt.Fprintln(out)
	writeTable(out, append([][]string{{"approach", "succeeded", "OOM-killed", "wall", "peak memory"}}, rows...), 1, 2, 3, 4)
	return nil
}

const memoryIntro = `Each unit is a cold apply of the demo component whose provider
allocates and touches the given size when terraform configures it, as a
large cloud provider does, and holds the call for a second, as a slow
cloud API would. Each approach runs in a child process of the bench that
joins the cgroup before it starts anything: the approach (for tfisolate,
the SDK, which reads its budget from the cgroup) and every process it
starts are in the cgroup; the bench, which serves the registry, is not.
*OOM-killed* is the cgroup's own count of the kernel's OOM kills during
the row (v1 memory.oom_control, v2 memory.events); *peak memory* is the
highest sum of the resident memory of every process the approach started
(the child itself left out), sampled from /proc every 20 ms: pages
processes share (the engine's binary) count once per process, so the sum
can pass the cgroup's limit. tfisolate without a budget runs a unit the
kernel killed once more when fewer units run (its count includes those
kills too).
`

// runMemChild runs one approach in a memory child (this executable with
// memChildEnv set, the provider's allocation in its environment) and
// returns its result and the peak resident memory of the processes it
// started. The child's progress goes to the bench's log.
func (e *env) runMemChild(ctx context.Context, spec memChildSpec, env []string) (*memChildResult, int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, fmt.Errorf("find this executable to start a memory child: %w", err)
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, 0, err
	}
	if err := os.Remove(spec.Result); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, memChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(append(os.Environ(), memChildEnv+"=1"), env...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = e.log, io.MultiWriter(e.log, &stderr)
	// SIGINT first: the child stops its approach as a user's ^C would.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start a memory child: %w", err)
	}
	smp := startSampler(cmd.Process.Pid)
	err = cmd.Wait()
	peak := smp.stop()
	if err != nil {
		return nil, peak, fmt.Errorf("memory child: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	b, err := os.ReadFile(spec.Result)
	if err != nil {
		return nil, peak, fmt.Errorf("memory child's result: %w", err)
	}
	var r memChildResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, peak, fmt.Errorf("memory child's result %s: %w", spec.Result, err)
	}
	return &r, peak, nil
}

// benchCgroup is the memory cgroup the memory section's children run in.
type benchCgroup struct {
	dir string
	v2  bool
}

// makeCgroup makes a memory cgroup under this process's own, limited to
// limit bytes (no swap). This process stays where it is.
func makeCgroup(limit int64) (*benchCgroup, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("making a memory cgroup needs root")
	}
	parent, v2 := memory.CgroupDir()
	if parent == "" {
		return nil, errors.New("no memory cgroup found for this process")
	}
	cg := &benchCgroup{dir: filepath.Join(parent, fmt.Sprintf("tfisolate-bench-%d", os.Getpid())), v2: v2}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a memory cgroup under %s: %w", parent, err)
	}
	files := [][2]string{{"memory.limit_in_bytes", fmt.Sprint(limit)}, {"memory.memsw.limit_in_bytes", fmt.Sprint(limit)}}
	if v2 {
		files = [][2]string{{"memory.max", fmt.Sprint(limit)}, {"memory.swap.max", "0"}}
	}
	for i, f := range files {
		err := os.WriteFile(filepath.Join(cg.dir, f[0]), []byte(f[1]), 0o644)
		if err != nil && !(i == 1 && errors.Is(err, os.ErrNotExist)) { // no swap accounting: nothing to limit
			_ = os.Remove(cg.dir)
			return nil, fmt.Errorf("limit the memory cgroup %s: %w", cg.dir, err)
		}
	}
	return cg, nil
}

// kills is the cgroup's OOM-kill count.
func (cg *benchCgroup) kills() int64 {
	n, _ := memory.CgroupOOMKills(cg.dir, cg.v2)
	return n
}

// remove removes the cgroup once its last process has gone.
func (cg *benchCgroup) remove() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(cg.dir)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove the memory cgroup: %w", err)
		}
		time.Sleep(50 * time.Millisecond) // the kernel frees a cgroup's last pages asynchronously
	}
}

// sampler keeps the highest resident memory of a process's descendants
// together.
type sampler struct {
	stopc, done chan struct{}
	peak        int64
}

// startSampler samples pid's descendants (not pid itself) every 20 ms
// until stop.
func startSampler(pid int) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if procs := memory.Tree(pid); len(procs) > 1 {
				s.peak = max(s.peak, memory.Sum(procs[1:]))
			}
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() int64 {
	close(s.stopc)
	<-s.done
	return s.peak
}
