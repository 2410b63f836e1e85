package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// tfProcess runs the terraform commands of one unit. The runner builds
// their arguments itself rather than through terraform-exec: it needs one
// process per command (terraform-exec runs `terraform version -json`
// before the first command of every *tfexec.Terraform), the unit's
// environment as is (terraform-exec refuses TF_VAR_* and TF_LOG*, which
// then could not keep terraform's own precedence), and the
// machine-readable UI of apply for outputs. Custom steps still get a
// *tfexec.Terraform (see Handle).
type tfProcess struct {
	path  string
	dir   string
	env   []string
	grace time.Duration   // SIGINT first, kill after this long
	kill  <-chan struct{} // closed: kill at once (a Stop's third request)
	out   *unitOutput
	// outDir holds terraform's stdout and stderr files (engineDir in the
	// instance's data dir).
	outDir string
	// started, when set, is called with each process's PID, and the path
	// of its stdout file, once it runs.
	started func(pid int, output string)
	// gate, when set, is waited for before each process starts (a core
	// under WithCoreGate); its release is called once the process ended.
	gate func(ctx context.Context) (release func(), err error)
	// killed is set once a process had to be killed (it did not stop
	// after SIGINT, or a Stop's third request): its state locks may be
	// left behind.
	killed bool
}

// tfRun is what one terraform process left behind.
type tfRun struct {
	exitCode int
	stdout   []byte // captured stdout, when asked for
	// From the machine-readable UI (-json):
	outputs map[string]OutputValue
	changes *changeSummary // the last change summary terraform gave
	// changeStarted is set once terraform reported a resource operation
	// or provisioner starting: from then on, infrastructure may differ
	// from the state, and the command must never be run again by itself.
	changeStarted bool
}

// summary is the change summary as a Result gives it; nil when terraform
// gave none.
func (r *tfRun) summary() *ChangeSummary {
	if r == nil || r.changes == nil {
		return nil
	}
	c := r.changes
	return &ChangeSummary{Add: c.Add, Change: c.Change, Destroy: c.Remove, Import: c.Import}
}

// changeSummary is terraform's change_summary message.
type changeSummary struct {
	Add       int    `json:"add"`
	Change    int    `json:"change"`
	Import    int    `json:"import"`
	Remove    int    `json:"remove"`
	Operation string `json:"operation"`
}

// tfError is a terraform process that failed: its arguments, exit code
// and what it said about why (stderr, or the error diagnostics of the
// machine-readable UI).
type tfError struct {
	args     []string
	exitCode int
	msg      string
	err      error // the exec error, when the process did not run or was killed
	// changeStarted: terraform had begun changing infrastructure (see
	// tfRun.changeStarted) before it failed.
	changeStarted bool
}

// mayHaveChanged reports whether a failed terraform may have changed
// infrastructure or failed to save the state of a change: such a command
// is never repeated by the runner (DESIGN invariant 19).
func (e *tfError) mayHaveChanged() bool {
	return e.changeStarted || stateNotSavedRe.MatchString(e.msg)
}

// stateNotSavedRe matches terraform's and tofu's ways of saying a state
// write failed after an apply: what they applied is only in
// errored.tfstate (or in their output) now.
var stateNotSavedRe = regexp.MustCompile(`(?i)Failed to (save|persist|write) (the )?state|errored\.tfstate`)

func (e *tfError) Error() string {
	var b strings.Builder
	b.WriteString("terraform")
	if len(e.args) > 0 {
		b.WriteString(" " + e.args[0])
	}
	switch {
	case e.err != nil:
		fmt.Fprintf(&b, ": %v", e.err)
	default:
		fmt.Fprintf(&b, ": exit status %d", e.exitCode)
	}
	if m := strings.TrimSpace(errorFirst(e.msg)); m != "" {
		b.WriteString(": " + m)
	}
	return b.String()
}

// firstErrorRe finds the first error diagnostic in what terraform said,
// plain or inside its box-drawing frame.
var firstErrorRe = regexp.MustCompile(`(?m)^[│╷ ]*Error: `)

// errorFirst puts terraform's first error diagnostic (its summary and
// detail, and what follows) ahead of whatever it printed before it, such
// as a warning about the CLI config: an error message leads with the
// cause.
func errorFirst(msg string) string {
	loc := firstErrorRe.FindStringIndex(msg)
	if loc == nil || strings.TrimSpace(msg[:loc[0]]) == "" {
		return msg
	}
	// Start the moved part at its frame's opening line, if it has one.
	start := loc[0]
	if i := strings.LastIndex(msg[:start], "╷"); i >= 0 && strings.TrimSpace(msg[i+len("╷"):start]) == "" {
		start = i
	}
	return strings.TrimSpace(msg[start:]) + "\n\n" + strings.TrimSpace(msg[:start])
}

func (e *tfError) Unwrap() error { return e.err }

// runOpts shape one run.
type runOpts struct {
	// capture keeps stdout (show -json, output -json) instead of logging it.
	capture bool
	// jsonUI parses stdout as terraform's machine-readable UI: each
	// message's text goes to the log, outputs and the change summary are
	// kept, error diagnostics form the error.
	jsonUI bool
	// okCodes are exit codes other than 0 that mean success (plan's
	// -detailed-exitcode 2).
	okCodes []int
	// hold, when set, decides whether what terraform said on stderr (and
	// in error diagnostics) about a failure goes to the log: a state-lock
	// attempt's is left out, since the caller writes one line per wait.
	hold func(err error) bool
}

// run starts terraform with args in the unit's directory and waits for
// it. Cancelling ctx sends it SIGINT; it is killed after the grace period,
// or at once when the kill channel closes.
//
// Terraform writes its stdout and stderr to files of its own (see
// engineOutput), never to a pipe of the host: a host that dies leaves no
// reader whose loss would kill terraform (SIGPIPE) before it has written
// its state. The host follows the stdout file as it grows (the log, the
// output stream and the machine-readable UI see each line as before) and
// reads stderr once terraform has exited.
func (t *tfProcess) run(ctx context.Context, args []string, o runOpts) (*tfRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, &tfError{args: args, err: err}
	}
	if t.gate != nil {
		release, err := t.gate(ctx)
		if err != nil {
			return nil, &tfError{args: args, err: err}
		}
		defer release()
	}
	eo, err := newEngineOutput(t.outDir)
	if err != nil {
		return nil, &tfError{args: args, err: err}
	}
	defer eo.remove()
	cmd := exec.CommandContext(ctx, t.path, args...)
	cmd.Dir = t.dir
	cmd.Env = t.env
	cmd.Cancel = func() error { return interruptProcess(cmd.Process) }
	cmd.WaitDelay = t.grace
	setProcAttrs(cmd)
	cmd.Stdout, cmd.Stderr = eo.stdout, eo.stderr

	held := &lockedBuffer{} // stderr and diagnostics, written to the log after the exit
	res := &tfRun{}
	var sink io.Writer // what follows stdout while terraform runs
	var finish func()  // after the follower's last copy
	switch {
	case o.capture:
	case o.jsonUI:
		pr, pw := io.Pipe() // in-process: terraform never writes to it
		ui := &uiReader{log: t.out.stream(), held: held, res: res}
		uiDone := make(chan struct{})
		go func() {
			defer close(uiDone)
			ui.read(pr)
		}()
		sink, finish = pw, func() { _ = pw.Close(); <-uiDone }
	default:
		lw := t.out.stream()
		sink, finish = lw, lw.flush
	}
	stopFollow := func() {}
	if sink != nil {
		stopFollow = follow(eo.stdoutR, sink)
	}

	err = cmd.Start()
	if err == nil {
		unwatch, werr := watchHost(cmd.Process.Pid)
		if werr != nil {
			// Terraform runs as before; only a death of this host would
			// leave it running uninterrupted, which the next run waits for.
			t.out.note("terraform is not interrupted if this process dies: " + werr.Error())
			unwatch = func() {}
		}
		if t.started != nil {
			t.started(cmd.Process.Pid, eo.stdout.Name())
		}
		stopKill := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-t.kill:
				_ = cmd.Process.Kill()
			case <-stopKill:
			}
		}()
		err = cmd.Wait()
		unwatch()
		close(stopKill)
		wg.Wait()
	}
	stopFollow()
	if finish != nil {
		finish()
	}
	if o.capture {
		res.stdout, _ = io.ReadAll(eo.stdoutR)
	}
	if b, _ := io.ReadAll(eo.stderrR); len(b) > 0 {
		_, _ = held.Write(b)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() < 0 {
		t.killed = true // ended by a signal it did not handle: SIGKILL
	}
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && ctx.Err() == nil && exitErr.ExitCode() >= 0:
		res.exitCode = exitErr.ExitCode()
		for _, c := range o.okCodes {
			if c == res.exitCode {
				err = nil
			}
		}
	}
	if err != nil {
		te := &tfError{args: args, exitCode: res.exitCode, msg: held.String(), changeStarted: res.changeStarted}
		if ctx.Err() != nil {
			te.err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else if exitErr == nil || exitErr.ExitCode() < 0 {
			te.err = err
		}
		err = te
	}
	if held.Len() > 0 && (err == nil || o.hold == nil || o.hold(err)) {
		w := t.out.stream()
		_, _ = w.Write(held.Bytes())
		w.flush()
	}
	return res, err
}

// engineDir is the dir in an instance's data dir where the engine's
// stdout and stderr files are, one pair per terraform process, removed
// once the host has read them. A pair left there is the output of an
// engine whose host died (or is still running it); see keptEngineOutput.
const engineDir = "tfisolate-engine"

// engineOutput is one terraform process's stdout and stderr files: the
// ends handed to terraform and the host's own ends to read them.
type engineOutput struct {
	stdout, stderr   *os.File // terraform's (the host closes its copies)
	stdoutR, stderrR *os.File
}

// newEngineOutput creates the files, 0600 (terraform may print what the
// caller keeps secret), in dir.
func newEngineOutput(dir string) (*engineOutput, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
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

// uiReader reads terraform's machine-readable UI (one JSON message per
// line): the text of each message goes to the log, error and warning
// diagnostics are rendered like terraform's own output and held, outputs
// and the change summary are kept.
type uiReader struct {
	log  *lineWriter
	held io.Writer
	res  *tfRun
}

type uiMessage struct {
	Message    string                     `json:"@message"`
	Type       string                     `json:"type"`
	Diagnostic *uiDiagnostic              `json:"diagnostic"`
	Outputs    map[string]json.RawMessage `json:"outputs"`
	Changes    *changeSummary             `json:"changes"`
}

type uiDiagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Address  string `json:"address"`
}

type uiOutput struct {
	Sensitive bool            `json:"sensitive"`
	Type      json.RawMessage `json:"type"`
	Value     json.RawMessage `json:"value"`
}

func (u *uiReader) read(r io.Reader) {
	defer u.log.flush()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var m uiMessage
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
			_, _ = u.log.Write(append(append([]byte(nil), line...), '\n'))
			continue
		}
		switch m.Type {
		case "diagnostic":
			if d := m.Diagnostic; d != nil {
				sev := "Warning"
				if d.Severity == "error" {
					sev = "Error"
				}
				fmt.Fprintf(u.held, "%s: %s\n", sev, d.Summary)
				if d.Address != "" {
					fmt.Fprintf(u.held, "  with %s\n", d.Address)
				}
				if d.Detail != "" {
					fmt.Fprintf(u.held, "\n%s\n", d.Detail)
				}
				_, _ = io.WriteString(u.held, "\n")
				continue
			}
		case "outputs":
			outs := map[string]OutputValue{}
			for name, raw := range m.Outputs {
				var o uiOutput
				if json.Unmarshal(raw, &o) == nil {
					outs[name] = OutputValue{Value: o.Value, Type: o.Type, Sensitive: o.Sensitive}
				}
			}
			u.res.outputs = outs
		case "change_summary":
			u.res.changes = m.Changes
		case "apply_start", "apply_progress", "apply_complete", "apply_errored",
			"provision_start", "provision_progress", "provision_complete", "provision_errored":
			u.res.changeStarted = true
		}
		if m.Message != "" {
			_, _ = u.log.Write([]byte(m.Message + "\n"))
		}
	}
	// A scanner error (a line over 64 MiB) leaves the rest unread; drain
	// it so terraform never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
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

// environ turns an environment map into the KEY=VALUE form exec takes,
// sorted so the order never depends on map iteration.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
