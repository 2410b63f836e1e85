//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/harness/naive"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// approach is one row of the comparison.
type approach struct {
	name  string // as -skip takes it
	label string
	naive naive.Approach // when not tfisolate
}

func (a approach) tfisolate() bool { return a.name == nameTfisolate }

var approaches = []approach{
	{nameShared, "(1) " + naive.Shared.String(), naive.Shared},
	{nameDataDir, "(2) " + naive.DataDir.String(), naive.DataDir},
	{namePreinit, "(3) " + naive.Preinit.String(), naive.Preinit},
	{nameSequential, "(4) " + naive.Sequential.String(), naive.Sequential},
	{nameTfisolate, "(5) tfisolate runner", 0},
}

// comparison is the approaches to run; none when both passes are skipped.
func (o *options) comparison() []approach {
	if o.skipped(nameCold) && o.skipped(nameWarm) {
		return nil
	}
	var as []approach
	for _, a := range approaches {
		if !o.skipped(a.name) {
			as = append(as, a)
		}
	}
	return as
}

// row is one approach's measured outcome in one pass.
type row struct {
	a         approach
	n, ok     int
	wall      time.Duration
	childCPU  time.Duration // terraform and everything it started
	selfCPU   time.Duration // this process: loopback registry, and for tfisolate the SDK
	downloads int
	disk      int64
	errors    map[string]int // first error line -> instances
}

// compare runs every approach cold (fresh dirs, empty caches), then warm
// (fresh dirs, the caches the cold pass filled), and prints one table per
// pass. A skipped cold pass still runs, unreported, to fill the caches.
func (e *env) compare(ctx context.Context, out io.Writer, as []approach) error {
	fmt.Fprintf(out, "\n## Comparison: %d instances, `terraform apply`\n\n", e.o.n)
	fmt.Fprintf(out, "Each approach runs the same %d instances, first **cold** (fresh directories, empty provider cache), then **warm** (fresh directories and state, the provider cache the cold pass filled). tfisolate runs at parallelism %d; the naive parallel approaches start every instance at once.\n", e.o.n, e.o.parallelism)
	for _, pass := range []string{nameCold, nameWarm} {
		if pass == nameWarm && e.o.skipped(nameWarm) {
			break
		}
		rows := make([]row, 0, len(as))
		for _, a := range as {
			if err := ctx.Err(); err != nil {
				return err
			}
			fmt.Fprintf(e.log, "bench: %s pass: %s...\n", pass, a.label)
			r, err := e.measure(ctx, a, pass)
			if err != nil {
				return fmt.Errorf("%s, %s pass: %w", a.label, pass, err)
			}
			fmt.Fprintf(e.log, "bench:   %d/%d succeeded in %s, %d downloads\n", r.ok, r.n, secs(r.wall), r.downloads)
			rows = append(rows, r)
		}
		if pass == nameCold && e.o.skipped(nameCold) {
			continue
		}
		printComparison(out, pass, rows)
	}
	fmt.Fprint(out, `
How to read it: *wall* is from the first terraform start to the last exit;
the naive approaches copy the component before the clock starts, while
tfisolate's workdir preparation is part of its run. *terraform CPU* is
user+system time of the terraform processes and everything they started
(providers, provisioners), from getrusage(RUSAGE_CHILDREN). *bench CPU* is
this process's own user+system time (getrusage(RUSAGE_SELF)) over the same
span: the loopback registry serving downloads (every approach), plus, for
tfisolate, the SDK itself (workdirs, provider cache, download, unpack,
hashing). *downloads* counts provider packages the registry served.
*disk* is what the run left on disk, each inode once: scratch copies, data
dirs, state, and the provider cache (for tfisolate: the workdirs root and
its provider cache). Ratios are wall time against (3) and (4) in the same
pass. Warm naive passes still download: each starts from a fresh copy of
the component without a .terraform.lock.hcl, and Terraform (1.4 and
later) takes a package from its plugin cache only when a lock file already
records its checksum.
`)
	return nil
}

// measure runs approach a once, in fresh directories, with the cache that
// belongs to a (kept across passes).
func (e *env) measure(ctx context.Context, a approach, pass string) (row, error) {
	base := filepath.Join(e.o.root, "compare", a.name)
	scratch := filepath.Join(base, pass)
	cache := filepath.Join(base, "plugin-cache")
	for _, d := range []string{scratch, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return row{}, err
		}
	}
	var r row
	var err error
	if a.tfisolate() {
		r, err = e.measureTfisolate(ctx, scratch, cache)
	} else {
		r, err = e.measureNaive(ctx, a.naive, scratch, cache)
	}
	r.a = a
	if err == nil && !e.o.keep {
		// The cache stays for the warm pass; the rest is measured and done.
		err = os.RemoveAll(scratch)
	}
	return r, err
}

func (e *env) measureNaive(ctx context.Context, a naive.Approach, scratch, cache string) (row, error) {
	cfg := naive.Config{
		Terraform:      e.tf,
		Source:         e.infra,
		Component:      demo.Component,
		Scratch:        scratch,
		Instances:      e.o.n,
		Command:        "apply",
		CLIConfig:      e.prov.TerraformCLIConfig(),
		Env:            append(os.Environ(), e.prov.TerraformEnv()...),
		Vars:           func(i int) []byte { return demo.VarsJSON(i+1, e.o.latency) },
		Files:          func(int) map[string][]byte { return map[string][]byte{"backend.tf.json": demo.BackendJSON()} },
		PluginCacheDir: cache,
	}
	d0, self0 := e.prov.Downloads(), selfCPU()
	res, err := naive.Run(ctx, cfg, a)
	if err != nil {
		return row{}, err
	}
	r := row{n: e.o.n, ok: res.Succeeded, wall: res.Wall, childCPU: res.CPU, selfCPU: selfCPU() - self0,
		downloads: e.prov.Downloads() - d0, disk: res.DiskBytes, errors: map[string]int{}}
	for _, oc := range res.Outcomes {
		switch {
		case len(oc.ErrorLines) > 0:
			r.errors[errorKey(oc.ErrorLines)]++
		case oc.Err != nil:
			r.errors[firstLine(oc.Err.Error())]++
		}
	}
	return r, nil
}

func (e *env) measureTfisolate(ctx context.Context, scratch, cacheDir string) (row, error) {
	cache, err := e.prov.OpenCache(cacheDir)
	if err != nil {
		return row{}, err
	}
	wroot := filepath.Join(scratch, "workdirs")
	wds, err := workdir.New(wroot)
	if err != nil {
		return row{}, err
	}
	rn, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(e.tf),
		runner.WithParallelism(e.o.parallelism),
	)
	if err != nil {
		return row{}, err
	}
	units := demo.Units(e.source, e.o.n, e.o.latency)
	d0, self0, child0 := e.prov.Downloads(), selfCPU(), childCPU()
	start := time.Now()
	rep, err := rn.Run(ctx, runner.Apply, units...)
	wall := time.Since(start)
	if rep == nil {
		return row{}, err
	}
	r := row{n: len(units), wall: wall, childCPU: childCPU() - child0, selfCPU: selfCPU() - self0,
		downloads: e.prov.Downloads() - d0, errors: map[string]int{}}
	for _, res := range rep.Results {
		if res.Status == runner.Succeeded {
			r.ok++
			continue
		}
		r.errors[firstLine(fmt.Sprint(res.Err))]++
	}
	r.disk = naive.DiskUsage(wroot) + naive.DiskUsage(cacheDir)
	return r, ctx.Err()
}

func printComparison(out io.Writer, pass string, rows []row) {
	title := map[string]string{nameCold: "Cold: empty provider cache", nameWarm: "Warm: provider cache kept from the cold pass"}[pass]
	fmt.Fprintf(out, "\n### %s\n\n", title)
	var preinit, sequential time.Duration
	for _, r := range rows {
		switch r.a.name {
		case namePreinit:
			preinit = r.wall
		case nameSequential:
			sequential = r.wall
		}
	}
	t := [][]string{{"approach", "succeeded", "wall", "vs (3)", "vs (4)", "terraform CPU", "bench CPU", "downloads", "disk"}}
	for _, r := range rows {
		t = append(t, []string{
			r.a.label,
			fmt.Sprintf("%d/%d", r.ok, r.n),
			secs(r.wall),
			ratio(r.wall, preinit),
			ratio(r.wall, sequential),
			secs(r.childCPU),
			secs(r.selfCPU),
			fmt.Sprint(r.downloads),
			mib(r.disk),
		})
	}
	writeTable(out, t, 1, 2, 3, 4, 5, 6, 7, 8)
	var notes []string
	for _, r := range rows {
		if len(r.errors) == 0 {
			continue
		}
		msgs := make([]string, 0, len(r.errors))
		for m := range r.errors {
			msgs = append(msgs, m)
		}
		sort.Slice(msgs, func(i, j int) bool {
			return r.errors[msgs[i]] > r.errors[msgs[j]] || r.errors[msgs[i]] == r.errors[msgs[j]] && msgs[i] < msgs[j]
		})
		var parts []string
		for _, m := range msgs {
			parts = append(parts, fmt.Sprintf("%dx `%s`", r.errors[m], strings.ReplaceAll(m, "`", "'")))
		}
		notes = append(notes, fmt.Sprintf("- %s: %d failed: %s", r.a.label, r.n-r.ok, strings.Join(parts, "; ")))
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "\nFailures (the error lines of each failed instance):\n\n%s\n", strings.Join(notes, "\n"))
	}
}

// errorKey joins the distinct "Error: ..." lines of one instance: the
// first alone is often only terraform's generic heading ("Terraform
// encountered problems during initialisation, ...").
func errorKey(lines []string) string {
	var distinct []string
	for _, l := range lines {
		if l = firstLine(l); !slices.Contains(distinct, l) {
			distinct = append(distinct, l)
		}
	}
	return strings.Join(distinct, " + ")
}

// firstLine is s's first line, cut to a length a table note can hold.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if l, _, ok := strings.Cut(s, "\n"); ok {
		s = strings.TrimSpace(l)
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "..."
	}
	return s
}
