//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// env is what every part of a bench run shares.
type env struct {
	o      *options
	tf     string // terraform
	infra  string // root of the demo tree (component + modules)
	source string // the component dir inside infra
	prov   *demo.Provider
	log    io.Writer // progress, on stderr
	start  cpuTimes  // the machine's CPU time when the bench began
}

// bench sets up terraform, the demo tree and the loopback registry, then
// prints the floor section, the comparison and the scaling table.
func bench(ctx context.Context, o *options, stdout io.Writer) error {
	e := &env{o: o, log: o.progressDest, start: readCPUTimes()}
	var err error
	if e.tf, err = engine.Find(ctx, engine.Terraform, filepath.Join(o.root, "terraform")); err != nil {
		return fmt.Errorf("terraform is not on PATH and could not be installed (%v): install Terraform 1.5 or newer and put it on PATH", err)
	}
	e.infra = filepath.Join(o.root, "infra")
	if e.source, err = demo.WriteInfra(e.infra); err != nil {
		return err
	}
	fmt.Fprintf(e.log, "bench: building/serving the test provider from %s\n", o.providerDir)
	if e.prov, err = demo.ServeProvider(o.providerDir, o.padding, testregistry.WithThrottle(o.throttle)); err != nil {
		return fmt.Errorf("serve the provider locally: %w", err)
	}
	defer e.prov.Close()

	var md bytes.Buffer
	out := io.MultiWriter(stdout, &md)
	fmt.Fprintf(out, "# tfisolate bench\n\n%s\n", e.describe(ctx))

	var errs []error
	if len(o.floorScenarios()) > 0 {
		if err := e.floorSection(ctx, out); err != nil {
			errs = append(errs, err)
		}
	}
	if cmp := o.comparison(); len(cmp) > 0 && ctx.Err() == nil {
		if err := e.compare(ctx, out, cmp); err != nil {
			errs = append(errs, err)
		}
	}
	if !o.skipped(nameMemory) && ctx.Err() == nil {
		if err := e.memorySection(ctx, out); err != nil {
			errs = append(errs, err)
		}
	}
	if len(o.scale) > 0 && ctx.Err() == nil {
		if err := e.scaling(ctx, out); err != nil {
			errs = append(errs, err)
		}
	}
	if !o.skipped(nameCost) && ctx.Err() == nil {
		if err := e.costSection(ctx, out); err != nil {
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(out, "\nLoad average after: %s. Steal time over the run (CPU the virtual machine's host gave to others): %s.\n", loadAvg(), e.start.stealSince())
	if o.markdown != "" {
		if err := os.WriteFile(o.markdown, md.Bytes(), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("-markdown: %w", err))
		}
	}
	if len(errs) > 0 {
		return joinErrs(errs)
	}
	return ctx.Err()
}

// describe is the setup paragraph every table is read against.
func (e *env) describe(ctx context.Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- command: `go run ./bench%s`\n", argString(e.o.args))
	fmt.Fprintf(&b, "- machine: %s/%s, %d CPUs, load average before: %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAvg())
	fmt.Fprintf(&b, "- terraform: %s (%s)\n", terraformVersion(ctx, e.tf), e.tf)
	throttle := "unthrottled"
	if e.o.throttle > 0 {
		throttle = fmt.Sprintf("throttled to %s/s per download", mib(e.o.throttle))
	}
	fmt.Fprintf(&b, "- provider: test provider, %s per package, served by a loopback HTTPS registry/network mirror, %s\n", mib(e.prov.Binary.Size), throttle)
	fmt.Fprintf(&b, "- scenario: instances elasticache/redis-cluster-1..N of one component (a local module, one provider resource, a provisioner sleeping %s), local state, `terraform init` + `apply`\n", e.o.latency)
	return b.String()
}

func terraformVersion(ctx context.Context, tf string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := commandOutput(ctx, tf, "version")
	if err != nil {
		return "unknown version"
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first
}

// cpuTimes is the machine's CPU time so far, in clock ticks, from the
// first line of /proc/stat: all of it, and the part a virtual machine's
// host gave to others (steal). ok is false where there is none.
type cpuTimes struct {
	total, steal int64
	ok           bool
}

// readCPUTimes reads /proc/stat now.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return parseCPUTimes(first)
}

// parseCPUTimes parses /proc/stat's "cpu" line: user nice system idle
// iowait irq softirq steal (guest time is within user already).
func parseCPUTimes(line string) cpuTimes {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	t.ok = true
	return t
}

// stealSince is the share of the machine's CPU time its host gave to
// others since t0, as "12%" ("n/a" without /proc/stat): on a virtual
// machine whose host is busy, every row gets less of the machine than
// its cores say, and ratios between runs drift with it.
func (t0 cpuTimes) stealSince() string {
	t := readCPUTimes()
	if !t0.ok || !t.ok || t.total <= t0.total {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(t.steal-t0.steal)/float64(t.total-t0.total))
}

// loadAvg is /proc/loadavg's first three fields, or "n/a" where there is
// none: the figures are only as good as the machine was quiet.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
