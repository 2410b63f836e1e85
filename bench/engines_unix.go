//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// procTimeout bounds one terraform or tofu process the floor section
// starts itself: far above any run here, so only a hung process meets it.
const procTimeout = 15 * time.Minute

// procRun is one finished engine process: its wall time, the CPU time
// (user+system) of it and of every descendant it waited for, and its
// combined output.
type procRun struct {
	wall, cpu time.Duration
	out       []byte
}

// runProc runs bin with args in dir and measures it. The CPU time comes
// from the rusage wait4 returns for the process, which on Linux covers the
// process and its waited-for descendants (provider plugins, provisioners):
// exactly the process tree, whatever else runs at the same time. A failed
// run is an error that quotes the end of its output.
func runProc(ctx context.Context, bin, dir string, env []string, args ...string) (procRun, error) {
	ctx, cancel := context.WithTimeout(ctx, procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// SIGINT first, so terraform releases its state lock and writes state.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := procRun{wall: time.Since(start), out: out.Bytes()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return r, fmt.Errorf("%s %s in %s: %w\n%s", filepath.Base(bin), args[0], dir, err, tail(r.out, 2000))
	}
	return r, nil
}

// tail is the end of b, at most n bytes, as text.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// instanceDir lays out a private copy of the infra tree at dir with
// instance i's generated files (and lock, when not nil, as the
// component's .terraform.lock.hcl) in its component dir, as a wrapper
// does for one instance, and returns the component dir.
func (e *env) instanceDir(dir string, i int, latency time.Duration, lock []byte) (string, error) {
	if err := os.CopyFS(dir, os.DirFS(e.infra)); err != nil {
		return "", fmt.Errorf("copy the infra tree to %s: %w", dir, err)
	}
	comp := filepath.Join(dir, filepath.FromSlash(demo.Component))
	files := demo.Files(i, latency)
	if lock != nil {
		files[".terraform.lock.hcl"] = lock
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(comp, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return comp, nil
}

// minTofu is the first OpenTofu release that locks its plugin cache per
// package, so parallel inits may share it.
var minTofu = version.Must(version.NewVersion("1.10.0"))

// findTofu returns the OpenTofu binary of the OpenTofu rows and its
// version, or why there is none: -tofu, else tofu on PATH, else OpenTofu
// testenv.TofuVersion built from its Go module once per machine (a few
// minutes the first time; cached under the user cache dir).
func (e *env) findTofu(ctx context.Context) (bin, ver string, err error) {
	bin = e.o.tofu
	if bin == "" {
		if bin, err = engine.Find(ctx, engine.OpenTofu, ""); err != nil {
			fmt.Fprintf(e.log, "bench: no tofu on PATH; building OpenTofu %s from its Go module (once per machine)...\n", testenv.TofuVersion)
			if bin, err = testenv.EnsureTofu(ctx); err != nil {
				return "", "", fmt.Errorf("no tofu on PATH, and building OpenTofu %s failed: %w", testenv.TofuVersion, err)
			}
		}
	}
	info, err := engine.Detect(ctx, bin)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", bin, err)
	}
	if info.Kind != engine.OpenTofu {
		return "", "", fmt.Errorf("%s is %s, not OpenTofu", bin, info)
	}
	if info.Version.LessThan(minTofu) {
		return "", "", fmt.Errorf("%s is %s: OpenTofu locks its plugin cache from %s on; before that, parallel inits sharing it are not safe", bin, info, minTofu)
	}
	return bin, info.String(), nil
}
