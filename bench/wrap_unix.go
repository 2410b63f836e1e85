//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The scaling table needs the time each unit spends inside terraform, which
// the runner's events cannot give: PhaseInit also covers the SDK's provider
// setup. So the runner is pointed at a wrapper script that runs the real
// terraform and appends each process's start and end to a log. bash's
// EPOCHREALTIME is read without forking, so the wrapper adds little; what
// it adds is measured (calibrate) and taken off the SDK's figure.
const wrapperScript = `#!/bin/bash
# Written by tfisolate's bench: runs terraform and logs when it started and
# ended, so the bench can tell time inside terraform from the SDK's own.
s=$EPOCHREALTIME
%s "$@" &
pid=$!
# Pass interrupts on, so a canceled run still lets terraform unlock state.
trap 'kill -INT $pid 2>/dev/null' INT
trap 'kill -TERM $pid 2>/dev/null' TERM
wait $pid
rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done
printf '%%s %%s %%s\t%%s\n' "$s" "$EPOCHREALTIME" "$1" "$TF_DATA_DIR" >>%s
exit $rc
`

// wrapper is one wrapper script and the log it appends to.
type wrapper struct {
	path, log string
}

// newWrapper writes a wrapper for the executable real into dir.
func newWrapper(dir, name, real string) (*wrapper, error) {
	if _, err := exec.LookPath("bash"); err != nil {
		return nil, fmt.Errorf("the scaling table times terraform with a bash wrapper: %w", err)
	}
	w := &wrapper{path: filepath.Join(dir, name), log: filepath.Join(dir, name+".times")}
	script := fmt.Sprintf(wrapperScript, shellQuote(real), shellQuote(w.log))
	if err := os.WriteFile(w.path, []byte(script), 0o755); err != nil {
		return nil, fmt.Errorf("write terraform wrapper: %w", err)
	}
	return w, nil
}

// call is one terraform process the wrapper saw.
type call struct {
	cmd        string
	dataDir    string // TF_DATA_DIR: which workdir, so which unit
	start, end time.Time
}

// calls reads the wrapper's log.
func (w *wrapper) calls() ([]call, error) {
	f, err := os.Open(w.log)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cs []call
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		head, dataDir, _ := strings.Cut(sc.Text(), "\t")
		fs := strings.Fields(head)
		if len(fs) < 2 {
			return nil, fmt.Errorf("%s: bad line %q", w.log, sc.Text())
		}
		s, err1 := epoch(fs[0])
		e, err2 := epoch(fs[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", w.log, sc.Text())
		}
		c := call{start: s, end: e, dataDir: dataDir}
		if len(fs) > 2 {
			c.cmd = fs[2]
		}
		cs = append(cs, c)
	}
	return cs, sc.Err()
}

// epoch parses EPOCHREALTIME ("1763769600.123456"; the decimal separator
// follows the locale).
func epoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(n, ns), nil
}

// calibrate measures the wall time the wrapper adds to one process start:
// the median of running a wrapped `true` minus the median of running
// `true` directly.
func calibrate(ctx context.Context, dir string) (time.Duration, error) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return 0, err
	}
	w, err := newWrapper(dir, "calibrate", truePath)
	if err != nil {
		return 0, err
	}
	const runs = 15
	timeRuns := func(path string) (time.Duration, error) {
		ds := make([]time.Duration, runs)
		for i := range ds {
			start := time.Now()
			if err := exec.CommandContext(ctx, path, "version").Run(); err != nil {
				return 0, fmt.Errorf("calibrate terraform wrapper: %w", err)
			}
			ds[i] = time.Since(start)
		}
		slices.Sort(ds)
		return ds[runs/2], nil
	}
	wrapped, err := timeRuns(w.path)
	if err != nil {
		return 0, err
	}
	direct, err := timeRuns(truePath)
	if err != nil {
		return 0, err
	}
	return max(wrapped-direct, 0), nil
}
