//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/testprovider/provider"
	"github.com/tfisolate/tfisolate/runner"
)

// memorySection is issue 16's memory scenario: -memory-n units whose
// provider holds -memory-provider-mib MiB resident, applied inside a
// memory cgroup limited to -memory-limit (below n times a unit's size),
// by tfisolate with its budget (read from the cgroup), tfisolate at a
// fixed parallelism of n with no budget, the hand-written workaround and
// OpenTofu (both n at once). The bench moves itself into the cgroup for
// the rows, so every process they start is in it, and back out after.
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
	cg, err := enterCgroup(o.memLimit)
	if err != nil {
		fmt.Fprintf(out, "\nSkipped: %v.\n", err)
		return nil
	}
	defer func() {
		if lerr := cg.leave(); lerr != nil {
			fmt.Fprintf(e.log, "bench: memory: %v\n", lerr)
		}
	}()
	// The provider allocates when terraform configures it; terraform,
	// tofu and the runner pass this process's environment on.
	// It holds the call a second, as a slow cloud API would: the units'
	// memory overlaps as it does when they wait on the cloud together.
	for k, v := range map[string]string{provider.AllocEnv: strconv.Itoa(o.memMiB), provider.AllocHoldEnv: "1s"} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
		defer os.Unsetenv(k)
	}

	s := floorScenario{key: nameMemory, n: o.memN, p: o.memN, workaround: true}
	dir := filepath.Join(g.dir, nameMemory)
	var rows [][]string
	add := func(label string, r *peerRow, kills int64, peak int64) {
		rows = append(rows, []string{label, fmt.Sprintf("%d/%d", r.ok, r.n), strconv.FormatInt(kills, 10), secs(r.wall), mib(peak)})
		fmt.Fprintf(e.log, "bench: memory: %s: %d/%d succeeded, %d OOM kills, %s, peak %s\n", label, r.ok, r.n, kills, secs(r.wall), mib(peak))
		for msg, n := range r.errs {
			fmt.Fprintf(e.log, "bench: memory:   %d x %s\n", n, firstLine(msg))
		}
	}
	measure := func(label string, row func() (*peerRow, error)) error {
		k0 := cg.kills()
		smp := startSampler()
		r, err := row()
		peak := smp.stop()
		if err != nil {
			return fmt.Errorf("memory section, %s: %w", label, err)
		}
		add(label, r, cg.kills()-k0, peak)
		return nil
	}
	for _, v := range []struct {
		label string
		opts  []runner.Option
	}{
		{"tfisolate (memory budget)", nil},
		{fmt.Sprintf("tfisolate (parallelism %d, no budget)", o.memN), []runner.Option{runner.WithMemoryBudget(runner.NoMemoryBudget)}},
	} {
		st, err := e.newTfiState(filepath.Join(dir, fmt.Sprint(len(rows))), s)
		if err != nil {
			return err
		}
		st.opts = v.opts
		if err := measure(v.label, func() (*peerRow, error) { return e.tfisolateRow(ctx, g, s, st, 0) }); err != nil {
			return err
		}
	}
	wa := filepath.Join(dir, "workaround")
	if err := os.MkdirAll(wa, 0o755); err != nil {
		return err
	}
	if err := measure("workaround", func() (*peerRow, error) { return e.workaroundRow(ctx, g, s, wa, false) }); err != nil {
		return err
	}
	if tofuBin != "" {
		if err := measure("OpenTofu", func() (*peerRow, error) { return e.tofuRow(ctx, g, s, tofuBin, filepath.Join(dir, "tofu"), false) }); err != nil {
			return err
		}
	} else {
		rows = append(rows, []string{"OpenTofu", "skipped: " + tofuErr.Error(), "", "", ""})
	}
	fmt.Fprintln(out)
	writeTable(out, append([][]string{{"approach", "succeeded", "OOM-killed", "wall", "peak memory"}}, rows...), 1, 2, 3, 4)
	return nil
}

const memoryIntro = `Each unit is a cold apply of the demo component whose provider
allocates and touches the given size when terraform configures it, as a
large cloud provider does, and holds the call for a second, as a slow
cloud API would. *OOM-killed* is the cgroup's own count of
the kernel's OOM kills during the row (v1 memory.oom_control, v2
memory.events); *peak memory* is the highest sum of the resident memory of
every process the bench had running, sampled from /proc every 20 ms: pages
processes share (the engine's binary) count once per process, so the sum
can pass the cgroup's limit. tfisolate without a budget runs a unit the
kernel killed once more when fewer units run (its count includes those
kills too).
`

// benchCgroup is the memory cgroup the bench runs its memory rows in.
type benchCgroup struct {
	dir, parent string
	v2          bool
}

// enterCgroup makes a memory cgroup under this process's own, limited to
// limit bytes (no swap), and moves this process into it.
func enterCgroup(limit int64) (*benchCgroup, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("making a memory cgroup needs root")
	}
	parent, v2 := memory.CgroupDir()
	if parent == "" {
		return nil, errors.New("no memory cgroup found for this process")
	}
	cg := &benchCgroup{dir: filepath.Join(parent, fmt.Sprintf("tfisolate-bench-%d", os.Getpid())), parent: parent, v2: v2}
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
	if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.Remove(cg.dir)
		return nil, fmt.Errorf("move the bench into the memory cgroup %s: %w", cg.dir, err)
	}
	return cg, nil
}

// kills is the cgroup's OOM-kill count.
func (cg *benchCgroup) kills() int64 {
	n, _ := memory.CgroupOOMKills(cg.dir, cg.v2)
	return n
}

// leave moves this process back to its cgroup and removes the one it made.
func (cg *benchCgroup) leave() error {
	if err := os.WriteFile(filepath.Join(cg.parent, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("leave the memory cgroup: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(cg.dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // the kernel frees a cgroup's last pages asynchronously
	}
}

// sampler keeps the highest resident memory of this process's
// descendants together.
type sampler struct {
	stopc, done chan struct{}
	peak        int64
}

func startSampler() *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if procs := memory.Tree(os.Getpid()); len(procs) > 1 {
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
