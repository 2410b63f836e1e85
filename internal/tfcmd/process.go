package tfcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// Process runs the terraform commands of one unit, one process per
// command, in Dir with Env. Its fields are set before the first Run.
type Process struct {
	// Path is the engine binary (terraform, tofu, or a shim).
	Path string
	// Dir is where terraform runs; Env its whole environment.
	Dir string
	Env []string
	// Grace is how long after SIGINT terraform is killed.
	Grace time.Duration
	// Kill, when it closes, kills a running terraform at once (a Stop's
	// third request).
	Kill <-chan struct{}
	// OutDir holds terraform's stdout and stderr files while it runs.
	OutDir string
	// Stream returns a writer for one source of the unit's log and the
	// function that writes its last partial line; Note writes one line of
	// the caller's own to the log.
	Stream func() (w io.Writer, flush func())
	Note   func(msg string)
	// Started, when set, is called with each process's PID, and the path
	// of its stdout file, once it runs.
	Started func(pid int, output string)
	// Gate, when set, is waited for before each process starts (the
	// runner's core gate); the release it returns is called once the
	// process has ended.
	Gate func(ctx context.Context) (release func(), err error)
	// Host, when set, is the watcher that interrupts terraform if this
	// host process dies, shared by the processes of a Run (the caller
	// closes it); nil gives each process a watcher of its own.
	Host *HostWatch
	// Follow, when set, wakes the copy of each process's output as it
	// is written, shared by the processes of a Run (the caller closes
	// it); nil gives each process an inotify instance of its own, whose
	// close waits in the kernel (see Follower).
	Follow *Follower
	// Share, when set, sizes each process's Go runtime to its share of
	// the host's cores among the Run's running processes (see
	// CoreShare); nil leaves GOMAXPROCS to Env.
	Share *CoreShare

	killed     bool
	killedSign time.Time // see KilledSign
}

// Killed reports whether a process had to be killed (it did not stop
// after SIGINT, or Kill closed): its state locks may be left behind.
func (p *Process) Killed() bool { return p.killed }

// KilledSign returns the last sign of life of the last process that had
// to be killed: when it last wrote its stdout or stderr, as the files'
// modification time says (only the process writes them, and the kernel
// dates a write from a clock that never runs ahead of the real one, so
// the process was running then; when it wrote nothing, that is when the
// files were made, before it started). Zero when none was killed. A state
// lock created after it is not that process's: the runner never takes
// such a lock for one a killed run left (see runner's leftBy).
func (p *Process) KilledSign() time.Time { return p.killedSign }

// Result is what one terraform process left behind.
type Result struct {
	// ExitCode is the exit code (one of the command's OKCodes, or 0).
	ExitCode int
	// Stdout is stdout, with Cmd.Capture.
	Stdout []byte
	// From the machine-readable UI (Cmd.JSON):
	// Outputs is the outputs message's content; nil when none came.
	Outputs map[string]Output
	// Changes is the last change summary; nil when none came.
	Changes *ChangeSummary
	// ChangeStarted is set once terraform reported a resource operation
	// or provisioner starting: from then on, infrastructure may differ
	// from the state, and the command must never be run again by itself.
	ChangeStarted bool
}

// Run starts terraform with c's arguments and waits for it. Cancelling
// ctx sends it SIGINT; it is killed after the grace period, or at once
// when Kill closes. A failure is an *Error; the Result is never nil.
//
// Terraform writes its stdout and stderr to files of its own (see
// engineOutput), never to a pipe of the host: a host that dies leaves no
// reader whose loss would kill terraform (SIGPIPE) before it has written
// its state. The host follows the stdout file as it grows (the log, the
// output stream and the machine-readable UI see each line as before) and
// reads stderr once terraform has exited.
func (p *Process) Run(ctx context.Context, c Cmd) (*Result, error) {
	res := &Result{}
	fail := func(err error) (*Result, error) {
		return res, &Error{Command: c.Name(), Args: c.Args, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if p.Gate != nil {
		release, err := p.Gate(ctx)
		if err != nil {
			return fail(err)
		}
		defer release()
	}
	eo, err := newEngineOutput(p.OutDir)
	if err != nil {
		return fail(err)
	}
	defer eo.remove()
	cmd := exec.CommandContext(ctx, p.Path, c.Args...)
	cmd.Dir = p.Dir
	env, shareDone := p.Share.shareEnv(p.Env)
	defer shareDone()
	cmd.Env = env
	cmd.Cancel = func() error { return interruptProcess(cmd.Process) }
	cmd.WaitDelay = p.Grace
	setProcAttrs(cmd)
	cmd.Stdout, cmd.Stderr = eo.stdout, eo.stderr

	held := &lockedBuffer{} // stderr and diagnostics, written to the log after the exit
	var sink io.Writer      // what follows stdout while terraform runs
	var finish func()       // after the follower's last copy
	switch {
	case c.Capture:
	case c.JSON:
		pr, pw := io.Pipe() // in-process: terraform never writes to it
		log, flush := p.Stream()
		ui := &uiReader{log: log, held: held, res: res}
		uiDone := make(chan struct{})
		go func() {
			defer close(uiDone)
			defer flush()
			ui.read(pr)
		}()
		sink, finish = pw, func() { _ = pw.Close(); <-uiDone }
	default:
		sink, finish = p.Stream()
	}
	stopFollow := func() {}
	if sink != nil {
		stopFollow = follow(eo.stdoutR, sink, p.Follow)
	}

	host := p.Host
	if host == nil {
		host = &HostWatch{}
		defer host.Close()
	}
	err = cmd.Start()
	if err == nil {
		pid := cmd.Process.Pid
		if werr := host.Add(pid); werr != nil {
			// Terraform runs as before; only a death of this host would
			// leave it running uninterrupted, which the next run waits for.
			p.Note("terraform is not interrupted if this process dies: " + werr.Error())
		}
		if p.Started != nil {
			p.Started(cmd.Process.Pid, eo.stdout.Name())
		}
		stopKill := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			select {
			case <-p.Kill:
				_ = cmd.Process.Kill()
			case <-stopKill:
			}
		})
		awaitExit(cmd.Process)
		err = cmd.Wait()
		host.Remove(pid)
		close(stopKill)
		wg.Wait()
	}
	stopFollow()
	if finish != nil {
		finish()
	}
	if c.Capture {
		res.Stdout, _ = io.ReadAll(eo.stdoutR)
	}
	if b, _ := io.ReadAll(eo.stderrR); len(b) > 0 {
		_, _ = held.Write(b)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() < 0 {
		p.killed = true // ended by a signal it did not handle: SIGKILL
		// Read before the files go (the deferred remove): once they
		// are gone, nothing else tells when it last ran.
		p.killedSign = eo.lastWrite()
	}
	if err != nil && errors.As(err, &exitErr) && ctx.Err() == nil && exitErr.ExitCode() >= 0 {
		res.ExitCode = exitErr.ExitCode()
		if slices.Contains(c.OKCodes, res.ExitCode) {
			err = nil
		}
	}
	if err != nil {
		te := &Error{Command: c.Name(), Args: c.Args, ExitCode: res.ExitCode, Stderr: held.String(), ChangeStarted: res.ChangeStarted}
		if ctx.Err() != nil {
			te.Err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else if exitErr == nil || exitErr.ExitCode() < 0 {
			te.Err = err
		}
		err = te
	}
	if held.Len() > 0 && (err == nil || c.LogFailure == nil || c.LogFailure(err)) {
		w, flush := p.Stream()
		_, _ = w.Write(held.Bytes())
		flush()
	}
	return res, err
}

// OutputDir is the dir, in an instance's data dir, where the engine's
// stdout and stderr files are, one pair per terraform process, removed
// once the host has read them. A pair left there is the output of an
// engine whose host died (or is still running it).
const OutputDir = "tfisolate-engine"

// engineOutput is one terraform process's stdout and stderr files: the
// ends handed to terraform and the host's own ends to read them.
type engineOutput struct {
	stdout, stderr   *os.File // terraform's (the host closes its copies)
	stdoutR, stderrR *os.File
}

// newEngineOutput creates the files, 0600 (terraform may print what the
// caller keeps secret), in dir.
func newEngineOutput(dir string) (*engineOutput, error) {
	if err := atomicfile.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("engine output: %w", err)
	}
	eo := &engineOutput{}
	var err error
	if eo.stdout, err = os.CreateTemp(dir, "*.out"); err != nil {
		return nil, fmt.Errorf("engine output: %w", err)
	}
	base := strings.TrimSuffix(eo.stdout.Name(), ".out")
	if eo.stderr, err = os.OpenFile(base+".err", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		if eo.stdoutR, err = os.Open(eo.stdout.Name()); err == nil {
			eo.stderrR, err = os.Open(eo.stderr.Name())
		}
	}
	if err != nil {
		eo.remove()
		return nil, fmt.Errorf("engine output: %w", err)
	}
	return eo, nil
}

// lastWrite is when the process last wrote either file; zero when
// neither can be read.
func (eo *engineOutput) lastWrite() time.Time {
	var t time.Time
	for _, f := range []*os.File{eo.stdoutR, eo.stderrR} {
		if fi, err := f.Stat(); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// remove closes and removes the files.
func (eo *engineOutput) remove() {
	for _, f := range []*os.File{eo.stdout, eo.stderr, eo.stdoutR, eo.stderrR} {
		if f != nil {
			_ = f.Close()
		}
	}
	for _, f := range []*os.File{eo.stdout, eo.stderr} {
		if f != nil {
			_ = os.Remove(f.Name())
		}
	}
}

// lockedBuffer is a bytes.Buffer two goroutines write: terraform's
// stderr and the machine-readable UI's diagnostics.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.buf.Bytes())
}
