//go:build unix

package naive

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Approach is one of today's ways to run many instances.
type Approach int

const (
	// Shared runs every instance in parallel in one source directory, sharing
	// its .terraform/ and lock file, with TF_PLUGIN_CACHE_DIR set.
	Shared Approach = iota
	// DataDir gives each parallel instance its own TF_DATA_DIR and shares
	// the plugin cache.
	DataDir
	// Preinit is the hand-written workaround: TF_DATA_DIR per instance, one
	// serial init to warm the plugin cache, then parallel runs.
	Preinit
	// Sequential runs the instances one after another in the shared directory
	// with per-instance TF_DATA_DIR.
	Sequential
)

// Approaches lists every approach in the order reports show them.
var Approaches = []Approach{Shared, DataDir, Preinit, Sequential}

func (a Approach) String() string {
	switch a {
	case Shared:
		return "naive parallel, shared dir + plugin cache"
	case DataDir:
		return "per-process TF_DATA_DIR"
	case Preinit:
		return "TF_DATA_DIR + plugin cache + serial pre-init"
	case Sequential:
		return "sequential"
	}
	return fmt.Sprintf("Approach(%d)", int(a))
}

// Config describes one comparison run.
type Config struct {
	// Terraform is the path of the terraform binary.
	Terraform string
	// Source is the tree holding the component (and the local modules it
	// calls). It is copied into Scratch; the copy of the component is the
	// "shared source dir" every instance runs in.
	Source string
	// Component is the root module's path relative to Source ("" for
	// Source itself).
	Component string
	// Scratch is an empty directory this run owns.
	Scratch string
	// Instances is how many instances to run.
	Instances int
	// Command is "apply" or "plan".
	Command string
	// CLIConfig is the terraform CLI config (provider installation); the run
	// adds plugin_cache_dir to it.
	CLIConfig []byte
	// Env is the base environment for terraform (TF_CLI_CONFIG_FILE is set
	// by the run).
	Env []string
	// Vars returns instance i's variables file content (JSON), may be nil.
	// It is written outside the shared dir and passed with -var-file.
	Vars func(i int) []byte
	// Files returns the files a wrapper generates into the component dir
	// for instance i (backend.tf.json, ...), may be nil. Like a wrapper,
	// each instance writes them into the shared dir right before its init.
	Files func(i int) map[string][]byte
	// PluginCacheDir is Terraform's plugin cache (TF_PLUGIN_CACHE_DIR /
	// plugin_cache_dir). Empty means a fresh one inside Scratch; setting it
	// lets a later run start with the cache an earlier one filled ("warm").
	// When it lies outside Scratch, Result.DiskBytes counts it too.
	PluginCacheDir string
	// LockFile, when not nil, is written into the shared copy as its
	// .terraform.lock.hcl, as a repository that commits its lock file has
	// it: terraform (1.4 and later) then takes the provider from a warm
	// plugin cache instead of downloading it again.
	LockFile []byte
	// Rerun runs the instances again in the directories an earlier Run
	// with the same Scratch left (the shared copy, data dirs, state), as a
	// script run a second time does; without it Scratch must not hold an
	// earlier run.
	Rerun bool
}

// Outcome is one instance's result.
type Outcome struct {
	Instance int
	Err      error
	// ErrorLines are the "Error: ..." lines terraform printed.
	ErrorLines []string
	Duration   time.Duration
}

// Result is one approach's outcome over all instances.
type Result struct {
	Approach  Approach
	Outcomes  []Outcome
	Wall      time.Duration
	CPU       time.Duration // user+system time of the terraform processes
	Succeeded int
	// DiskBytes is what the run left on disk: shared dir, data dirs, cache.
	DiskBytes int64
}

// Run runs the approach and reports each instance. An error is returned only
// when the run could not be set up; terraform failures are outcomes.
func Run(ctx context.Context, cfg Config, a Approach) (*Result, error) {
	if cfg.Command == "" {
		cfg.Command = "apply"
	}
	dir := filepath.Join(cfg.Scratch, "src")
	if cfg.Rerun {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("rerun in %s: no earlier run there: %w", cfg.Scratch, err)
		}
	} else if err := os.CopyFS(dir, os.DirFS(cfg.Source)); err != nil {
		return nil, fmt.Errorf("copy component %s: %w", cfg.Source, err)
	}
	if cfg.LockFile != nil {
		lock := filepath.Join(dir, filepath.FromSlash(cfg.Component), ".terraform.lock.hcl")
		if err := os.WriteFile(lock, cfg.LockFile, 0o644); err != nil {
			return nil, fmt.Errorf("write lock file: %w", err)
		}
	}
	cache := filepath.Join(cfg.Scratch, "plugin-cache")
	if cfg.PluginCacheDir != "" {
		cache = cfg.PluginCacheDir
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	cliPath := filepath.Join(cfg.Scratch, "terraform.rc")
	cli := append(append([]byte{}, cfg.CLIConfig...), fmt.Sprintf("\nplugin_cache_dir = %q\n", cache)...)
	if err := os.WriteFile(cliPath, cli, 0o644); err != nil {
		return nil, err
	}
	inst := make([]instance, cfg.Instances)
	for i := range inst {
		in := &inst[i]
		in.n = i + 1
		in.dir = filepath.Join(dir, filepath.FromSlash(cfg.Component))
		in.env = append(append([]string{}, cfg.Env...), "TF_CLI_CONFIG_FILE="+cliPath, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		if a != Shared {
			in.env = append(in.env, "TF_DATA_DIR="+filepath.Join(cfg.Scratch, "data", fmt.Sprint(in.n)))
		}
		if cfg.Files != nil {
			in.files = cfg.Files(i)
		}
		in.state = filepath.Join(cfg.Scratch, "state", fmt.Sprintf("%d.tfstate", in.n))
		if cfg.Vars != nil {
			in.vars = filepath.Join(cfg.Scratch, "vars", fmt.Sprintf("%d.tfvars.json", in.n))
			if err := os.MkdirAll(filepath.Dir(in.vars), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(in.vars, cfg.Vars(i), 0o644); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(filepath.Dir(in.state), 0o755); err != nil {
			return nil, err
		}
	}

	res := &Result{Approach: a, Outcomes: make([]Outcome, len(inst))}
	before := childCPU()
	start := time.Now()
	switch a {
	case Sequential:
		for i := range inst {
			res.Outcomes[i] = inst[i].run(ctx, cfg)
		}
	case Preinit:
		// The workaround's serial step: one init fills the cache and writes
		// the shared lock file before anything runs in parallel.
		if len(inst) > 0 {
			if err := inst[0].generate(); err != nil {
				return nil, err
			}
			if _, err := inst[0].terraform(ctx, cfg, "init", "-input=false", "-reconfigure", "-backend-config=path="+inst[0].state); err != nil {
				res.Outcomes[0].Err = fmt.Errorf("pre-init: %w", err)
			}
		}
		fallthrough
	default:
		var wg sync.WaitGroup
		for i := range inst {
			wg.Go(func() { res.Outcomes[i] = inst[i].run(ctx, cfg) })
		}
		wg.Wait()
	}
	res.Wall = time.Since(start)
	res.CPU = childCPU() - before
	for i := range res.Outcomes {
		res.Outcomes[i].Instance = inst[i].n
		if res.Outcomes[i].Err == nil {
			res.Succeeded++
		}
	}
	res.DiskBytes = DiskUsage(cfg.Scratch)
	if rel, err := filepath.Rel(cfg.Scratch, cache); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		res.DiskBytes += DiskUsage(cache)
	}
	return res, nil
}

type instance struct {
	n                int
	dir, state, vars string
	env              []string
	files            map[string][]byte
}

// generate writes the instance's generated files into the shared dir the
// way wrappers do: plain truncate-and-write, racing with other instances.
func (in *instance) generate() error {
	for name, b := range in.files {
		if err := os.WriteFile(filepath.Join(in.dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (in *instance) run(ctx context.Context, cfg Config) Outcome {
	start := time.Now()
	fail := func(err error, out []byte) Outcome {
		return Outcome{Err: err, ErrorLines: errorLines(out), Duration: time.Since(start)}
	}
	if err := in.generate(); err != nil {
		return fail(fmt.Errorf("instance %d: generate files: %w", in.n, err), nil)
	}
	if out, err := in.terraform(ctx, cfg, "init", "-input=false", "-reconfigure", "-backend-config=path="+in.state); err != nil {
		return fail(fmt.Errorf("instance %d: init: %w", in.n, err), out)
	}
	args := []string{cfg.Command, "-input=false", "-no-color"}
	if cfg.Command == "apply" || cfg.Command == "destroy" {
		args = append(args, "-auto-approve")
	}
	if in.vars != "" {
		args = append(args, "-var-file="+in.vars)
	}
	if out, err := in.terraform(ctx, cfg, args...); err != nil {
		return fail(fmt.Errorf("instance %d: %s: %w", in.n, cfg.Command, err), out)
	}
	return Outcome{Duration: time.Since(start)}
}

func (in *instance) terraform(ctx context.Context, cfg Config, args ...string) ([]byte, error) {
	if args[0] == "init" {
		args = append(args, "-no-color")
	}
	cmd := exec.CommandContext(ctx, cfg.Terraform, args...)
	cmd.Dir = in.dir
	cmd.Env = in.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// errorLines picks terraform's "Error: ..." summaries (the lines a person
// would quote), without the box-drawing prefix terraform adds.
func errorLines(out []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := strings.TrimSpace(strings.TrimLeft(sc.Text(), "│╷╵ "))
		if strings.HasPrefix(l, "Error: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// DiskUsage sums the sizes of regular files under dir, counting each inode
// once, so hard links and the one file behind many symlinks count once.
func DiskUsage(dir string) int64 {
	seen := map[[2]uint64]bool{}
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			k := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
			if seen[k] {
				return nil
			}
			seen[k] = true
			n += st.Blocks * 512
			return nil
		}
		n += fi.Size()
		return nil
	})
	return n
}
