package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// workerGrace is how long a worker gets to interrupt its terraform runs
// (so state locks are released) once the parent is told to stop.
const workerGrace = 40 * time.Second

// startWorkers starts one process per config, all at once, and waits for
// every one of them. Each worker's stderr lines reach progress prefixed
// with its number. A worker that fails to start, exits non-zero or prints
// no result is reported in its procResult's Error.
func startWorkers(ctx context.Context, exe string, cfgs []workerConfig, progress io.Writer) []procResult {
	out := &lineSink{w: progress}
	results := make([]procResult, len(cfgs))
	var wg sync.WaitGroup
	for k, cfg := range cfgs {
		wg.Go(func() { results[k] = runWorker(ctx, exe, cfg, out) })
	}
	wg.Wait()
	return results
}

func runWorker(ctx context.Context, exe string, cfg workerConfig, out *lineSink) procResult {
	res := procResult{Process: cfg.Process}
	b, err := json.Marshal(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), workerEnv+"="+string(b))
	// Interrupt first, so the worker's runner interrupts terraform and
	// state locks are released; kill only after the grace period.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = workerGrace
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr := &prefixWriter{sink: out, prefix: fmt.Sprintf("[proc %d] ", cfg.Process)}
	cmd.Stderr = stderr
	runErr := cmd.Run()
	stderr.flush()
	last := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	if jerr := json.Unmarshal([]byte(last), &res); jerr != nil {
		res.Error = fmt.Sprintf("worker %d printed no result (%v): %v", cfg.Process, runErr, jerr)
		return res
	}
	if runErr != nil && res.Error == "" {
		res.Error = fmt.Sprintf("worker %d: %v", cfg.Process, runErr)
	}
	return res
}

// lineSink serializes whole lines from several workers onto one writer.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *lineSink) line(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(b)
}

// prefixWriter splits a worker's output into lines and sends each one,
// prefixed, to the sink. exec.Cmd copies a pipe into it from a single
// goroutine, so it needs no lock of its own.
type prefixWriter struct {
	sink   *lineSink
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.sink.line(append([]byte(p.prefix), p.buf[:i+1]...))
		p.buf = p.buf[i+1:]
	}
}

func (p *prefixWriter) flush() {
	if len(p.buf) > 0 {
		p.sink.line(append([]byte(p.prefix), append(p.buf, '\n')...))
		p.buf = nil
	}
}
