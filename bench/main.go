// Command bench puts tfisolate's runner beside today's ways of running many
// Terraform instances, on the same instances and the same loopback
// registry, and prints the outcome as markdown tables:
//
//   - a comparison: naive parallel runs in one shared dir, per-process
//     TF_DATA_DIR, TF_DATA_DIR + plugin cache + serial pre-init, sequential
//     runs and tfisolate, each first with empty caches (cold), then again
//     with the caches the first pass filled (warm);
//   - a scaling table: N units whose apply waits -latency, at several
//     parallelisms, wall time against the ideal ceil(N/p) x latency and the
//     SDK's own time per unit outside terraform.
//
// Everything is offline: the test provider is built once (kept in
// -provider-dir), padded to a realistic size and served by a throttled
// loopback HTTPS registry. Run it with `go run ./bench -n 12`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage was the answer
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Names of the comparison's approaches, as -skip takes them.
const (
	nameShared     = "shared"
	nameDataDir    = "datadir"
	namePreinit    = "preinit"
	nameSequential = "sequential"
	nameTfisolate  = "tfisolate"
	nameCold       = "cold"
	nameWarm       = "warm"
	// The floor section and its parts.
	nameFloor = "floor"
	nameBase  = "base"
	nameLarge = "large"
	nameWide  = "wide"
	nameTofu  = "tofu"
	// The floor section's tfisolate row with runner.WithCoreGate (issue
	// 16 part 2); its skip name and its rows' label.
	nameGated = "tfisolate (core gate)"
	skipGated = "gate"
	// The memory section (issue 16).
	nameMemory = "memory"
	// The cost section (issue 24's scale suite).
	nameCost = "cost"
)

var skippable = []string{nameShared, nameDataDir, namePreinit, nameSequential, nameTfisolate, nameCold, nameWarm,
	nameFloor, nameBase, nameLarge, nameWide, nameTofu, skipGated, nameMemory, nameCost}

type options struct {
	n            int
	parallelism  int
	scale        []int
	scalePar     []int
	latency      time.Duration
	throttle     int64
	padding      int64
	largePadding int64
	largeN       int
	wideN        int
	widePar      int
	floorReps    int
	tofu         string // -tofu: the OpenTofu binary; "" finds or builds one
	skip         map[string]bool
	root         string
	keep         bool
	markdown     string
	cpuProfile   string // -cpuprofile: where the bench's own CPU profile goes
	providerDir  string
	memN         int   // the memory section's units
	memMiB       int   // what each unit's provider holds, MiB
	memLimit     int64 // the memory section's cgroup limit, bytes
	progressDest io.Writer
	args         []string // as given, for the report's "how it was made"
	// The cost section: unit counts of real terraform, its parallelism,
	// queue sizes, idle processes and the units run beside them, Affected
	// sizes, and the instances and files of the read-once scenario;
	// costReps is the rounds of floor and Run passes per unit count.
	costN, costQueue, costAffected   []int
	costPar, costIdle, costIdleUnits int
	costInstances, costFiles         int
	costReps                         int
}

func (o *options) skipped(name string) bool { return o.skip[name] }

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{skip: map[string]bool{}, progressDest: stderr, args: args}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 12, "instances in the comparison")
	fs.IntVar(&o.parallelism, "parallelism", 0, "tfisolate's parallelism in the comparison (default: n, like the naive parallel runs)")
	scale := fs.String("scale", "12,48,100", `unit counts of the scaling table ("" or "none": no scaling table)`)
	scalePar := fs.String("scale-parallelism", "8,16,32", "parallelisms of the scaling table")
	fs.DurationVar(&o.latency, "latency", 2*time.Second, "simulated cloud latency of one apply (a sleeping provisioner)")
	fs.Int64Var(&o.throttle, "throttle", 20<<20, "download speed of the loopback registry in bytes/s (0: unlimited)")
	fs.Int64Var(&o.padding, "provider-size", 24<<20, "bytes of padding added to the served provider binary")
	fs.Int64Var(&o.largePadding, "large-provider-size", 200<<20, "bytes of padding of the provider in the floor section's large-provider scenario")
	fs.IntVar(&o.largeN, "large-n", 12, "instances (all at once) in the large-provider scenario, which has no simulated latency")
	fs.IntVar(&o.wideN, "wide-n", 48, "units in the floor section's wide scenario (apply waits -latency)")
	fs.IntVar(&o.widePar, "wide-parallelism", 16, "parallelism of the wide scenario")
	fs.IntVar(&o.floorReps, "floor-reps", 5, "runs of terraform alone that each floor figure is the median of")
	fs.IntVar(&o.memN, "memory-n", 12, "units of the memory section")
	fs.IntVar(&o.memMiB, "memory-provider-mib", 600, "MiB the memory section's provider allocates and holds")
	fs.Int64Var(&o.memLimit, "memory-limit", 2<<30, "bytes of the memory section's cgroup (below memory-n units' size)")
	fs.StringVar(&o.tofu, "tofu", "", "the OpenTofu (1.10 or newer) binary of the OpenTofu rows (default: tofu on PATH, else OpenTofu "+testenv.TofuVersion+" built once from its Go module)")
	skip := fs.String("skip", "", "comma-separated parts to skip: comparison approaches "+strings.Join(skippable[:5], ", ")+
		"; comparison passes "+nameCold+", "+nameWarm+" (both: no comparison); "+nameFloor+" (the whole floor section) or its scenarios "+
		nameBase+", "+nameLarge+", "+nameWide+"; "+nameTofu+" (the OpenTofu rows); "+skipGated+" (the floor section's tfisolate row with the core gate); "+nameMemory+" (the memory section); "+nameCost+" (the cost section)")
	fs.StringVar(&o.root, "root", "", "where the scratch directory is made (default: the temp dir); it is removed at the end unless -keep")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory")
	fs.StringVar(&o.markdown, "markdown", "", "also write the tables to this file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the bench's own CPU profile (the SDK's work, not terraform's) to this file")
	fs.StringVar(&o.providerDir, "provider-dir", "", "where the test provider is built and kept between runs (default: the user cache dir)")
	costN := fs.String("cost-n", "12,120", `cost section: unit counts of real terraform against its floor ("none": none; the issue's suite also asks for 1200); each costs -cost-reps rounds`)
	fs.IntVar(&o.costReps, "cost-reps", 3, "cost section: rounds per unit count of real terraform; a round runs terraform's floor and tfisolate's Run side by side (cold, then warm; flat, then wide DAG), and each ratio is the median of the rounds' ratios")
	fs.IntVar(&o.costPar, "cost-parallelism", 8, "cost section: parallelism of the real-terraform runs and of the floor")
	costQueue := fs.String("cost-queue", "10000,40000", `cost section: unit counts through the queue with a stub engine ("none": none)`)
	fs.IntVar(&o.costIdle, "cost-idle", 3000, "cost section: idle processes beside a skip-unchanged Run (0: none)")
	fs.IntVar(&o.costIdleUnits, "cost-idle-units", 120, "cost section: units of the skip-unchanged Run beside idle processes")
	costAffected := fs.String("cost-affected", "1000,10000", `cost section: unit counts of Affected over 12 components ("none": none)`)
	fs.IntVar(&o.costInstances, "cost-instances", 100, "cost section: instances of one large component whose unchanged refresh must read it once (0: none)")
	fs.IntVar(&o.costFiles, "cost-files", 10000, "cost section: files of that component (about 1 KiB each)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.n < 1 {
		return nil, fmt.Errorf("-n %d: want at least 1", o.n)
	}
	if o.parallelism == 0 {
		o.parallelism = o.n
	}
	if o.parallelism < 1 {
		return nil, fmt.Errorf("-parallelism %d: want at least 1", o.parallelism)
	}
	var err error
	for _, f := range []struct {
		name string
		s    string
		v    *[]int
	}{{"-cost-n", *costN, &o.costN}, {"-cost-queue", *costQueue, &o.costQueue}, {"-cost-affected", *costAffected, &o.costAffected}} {
		if *f.v, err = parseInts(f.name, f.s); err != nil {
			return nil, err
		}
	}
	if o.costPar < 1 || o.costIdle < 0 || o.costIdleUnits < 1 || o.costInstances < 0 || o.costFiles < 0 {
		return nil, fmt.Errorf("-cost-parallelism %d, -cost-idle %d, -cost-idle-units %d, -cost-instances %d, -cost-files %d: want at least 1, 0, 1, 0, 0",
			o.costPar, o.costIdle, o.costIdleUnits, o.costInstances, o.costFiles)
	}
	if o.scale, err = parseInts("-scale", *scale); err != nil {
		return nil, err
	}
	if o.scalePar, err = parseInts("-scale-parallelism", *scalePar); err != nil {
		return nil, err
	}
	if len(o.scale) > 0 && len(o.scalePar) == 0 {
		return nil, errors.New("-scale-parallelism: want at least one parallelism when -scale is set")
	}
	if o.latency < 0 {
		return nil, fmt.Errorf("-latency %s: want zero or more", o.latency)
	}
	if o.throttle < 0 || o.padding < 0 || o.largePadding < 0 {
		return nil, fmt.Errorf("-throttle %d, -provider-size %d, -large-provider-size %d: want zero or more", o.throttle, o.padding, o.largePadding)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"-memory-n", o.memN}, {"-memory-provider-mib", o.memMiB}, {"-large-n", o.largeN}, {"-wide-n", o.wideN}, {"-wide-parallelism", o.widePar}, {"-floor-reps", o.floorReps}, {"-cost-reps", o.costReps}} {
		if f.v < 1 {
			return nil, fmt.Errorf("%s %d: want at least 1", f.name, f.v)
		}
	}
	if o.memLimit < 1 {
		return nil, fmt.Errorf("-memory-limit %d: want bytes > 0", o.memLimit)
	}
	if o.tofu != "" {
		if o.tofu, err = filepath.Abs(o.tofu); err != nil {
			return nil, fmt.Errorf("-tofu: %w", err)
		}
	}
	for _, s := range strings.Split(*skip, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(skippable, s) {
			return nil, fmt.Errorf("-skip %q: want some of %s", s, strings.Join(skippable, ", "))
		}
		o.skip[s] = true
	}
	if o.providerDir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no -provider-dir given and no user cache dir: %w", err)
		}
		o.providerDir = filepath.Join(c, "tfisolate", "bench", "provider")
	}
	if o.providerDir, err = filepath.Abs(o.providerDir); err != nil {
		return nil, fmt.Errorf("-provider-dir: %w", err)
	}
	if o.root != "" {
		if o.root, err = filepath.Abs(o.root); err != nil {
			return nil, fmt.Errorf("-root %q: %w", o.root, err)
		}
	}
	return o, nil
}

// parseInts parses "12,48,100"; "" and "none" mean no values.
func parseInts(flagName, s string) ([]int, error) {
	if s = strings.TrimSpace(s); s == "" || s == "none" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s %q: want comma-separated numbers of at least 1", flagName, s)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("-cpuprofile: %w", cerr)
			}
		}()
	}
	// The scratch dir is always new, under -root when given, so a run
	// never meets a previous run's state or caches.
	if o.root != "" {
		if err := os.MkdirAll(o.root, 0o755); err != nil {
			return fmt.Errorf("-root: %w", err)
		}
	}
	if o.root, err = os.MkdirTemp(o.root, "tfisolate-bench-"); err != nil {
		return fmt.Errorf("create scratch dir: %w", err)
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(o.progressDest, "bench: kept %s\n", o.root)
			return
		}
		err = errors.Join(err, os.RemoveAll(o.root))
	}()
	return bench(ctx, o, stdout)
}

// argString is args as a shell would need them, with a leading space.
func argString(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			b.WriteString(shellQuote(a))
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
