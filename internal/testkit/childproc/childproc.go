package childproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Env carries the role of a child started by Start. Its presence is what
// makes a test binary a child.
const Env = "TFISOLATE_TEST_CHILD"

// Main is the body of a package's TestMain. In a child started by Start,
// it runs child with the child's role and exits: 0 when child returns
// nil, 1 with the error on stderr otherwise. In the test binary proper it
// runs the tests, then each of after in order, and exits with the tests'
// code.
func Main(m *testing.M, child func(role string) error, after ...func()) {
	if role, ok := os.LookupEnv(Env); ok {
		os.Exit(runChild(role, child))
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// runChild runs child for role in this process and returns its exit code.
func runChild(role string, child func(role string) error) int {
	// What the child starts must not take itself for a child.
	if err := os.Unsetenv(Env); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if err := child(role); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// DefaultTimeout is how long a child may run unless WithTimeout says
// otherwise: it only keeps a broken test from hanging.
const DefaultTimeout = 3 * time.Minute

// Option changes how Start starts a child.
type Option func(*config)

type config struct {
	env     []string
	stderr  io.Writer
	attr    *syscall.SysProcAttr
	timeout time.Duration
}

// WithEnv adds KEY=VALUE entries to the child's environment, which is
// otherwise this process's.
func WithEnv(kv ...string) Option { return func(c *config) { c.env = append(c.env, kv...) } }

// WithStderr sends the child's stderr to w instead of this process's
// stderr; a nil w discards it.
func WithStderr(w io.Writer) Option { return func(c *config) { c.stderr = w } }

// WithSysProcAttr sets the child's OS attributes, such as a process group
// of its own.
func WithSysProcAttr(a *syscall.SysProcAttr) Option { return func(c *config) { c.attr = a } }

// WithTimeout sets how long the child may run before it is killed.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Proc is a running child.
type Proc struct {
	// Cmd is the child's command, started. Its ProcessState is set once
	// Done is closed.
	Cmd *exec.Cmd
	// Stdin is the child's stdin; closing it is the usual "let go" signal.
	Stdin io.WriteCloser

	mu      sync.Mutex
	lines   []string      // every stdout line so far
	read    int           // how many of lines Next, WaitLine and ReadLine took
	eof     bool          // stdout ended
	changed chan struct{} // closed and replaced when lines or eof change

	done chan struct{} // closed once the child is reaped
	err  error         // how it exited; read after done
}

// Start re-executes the test binary as a child with role, running no
// test, and returns it running. The child is killed and waited for when
// the test ends.
func Start(tb testing.TB, role string, opts ...Option) *Proc {
	tb.Helper()
	p, err := Spawn(tb, role, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Spawn is Start returning a failure to start instead of failing the
// test, for a goroutine other than the test's, which must not call
// tb.Fatal.
func Spawn(tb testing.TB, role string, opts ...Option) (*Proc, error) {
	cfg := config{stderr: os.Stderr, timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), Env+"="+role), cfg.env...)
	cmd.Stderr = cfg.stderr
	cmd.SysProcAttr = cfg.attr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("childproc: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("childproc: %w", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("childproc: start child %q: %w", role, err)
	}
	p := &Proc{Cmd: cmd, Stdin: stdin, changed: make(chan struct{}), done: make(chan struct{})}
	// The child is read and reaped here, whether or not the test reads
	// its lines: it never blocks on a full pipe, and Done closes when it
	// exits. Wait comes after the last read, as os/exec requires.
	go func() {
		defer cancel()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			p.update(func() { p.lines = append(p.lines, sc.Text()) })
		}
		p.update(func() { p.eof = true })
		p.err = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() { _ = p.Kill() })
	return p, nil
}

// update changes the line state under the lock and wakes the readers.
func (p *Proc) update(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
}

// PID is the child's process ID.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// ReadLine returns the child's next stdout line not yet taken, waiting for
// it, or ok false once the child's stdout has ended. Unlike Next it needs
// no test, so a goroutine other than the test's may watch the child with
// it.
func (p *Proc) ReadLine() (line string, ok bool) {
	for {
		p.mu.Lock()
		if p.read < len(p.lines) {
			l := p.lines[p.read]
			p.read++
			p.mu.Unlock()
			return l, true
		}
		eof, changed := p.eof, p.changed
		p.mu.Unlock()
		if eof {
			return "", false
		}
		<-changed // bounded: the child's timeout ends its stdout
	}
}

// Next returns the child's next stdout line; it fails the test if the
// child's stdout ends first.
func (p *Proc) Next(tb testing.TB) string {
	tb.Helper()
	l, ok := p.ReadLine()
	if !ok {
		tb.Fatalf("childproc: the child's stdout ended; it printed:\n%s", p.Output())
	}
	return l
}

// Expect reads the child's next stdout line and fails the test unless it
// is want.
func (p *Proc) Expect(tb testing.TB, want string) {
	tb.Helper()
	if got := strings.TrimSpace(p.Next(tb)); got != want {
		tb.Fatalf("childproc: the child said %q, want %q", got, want)
	}
}

// WaitLine reads the child's stdout lines up to one containing s; it fails
// the test if the child's stdout ends first.
func (p *Proc) WaitLine(tb testing.TB, s string) {
	tb.Helper()
	for {
		l, ok := p.ReadLine()
		if !ok {
			tb.Fatalf("childproc: the child's stdout ended without %q; it printed:\n%s", s, p.Output())
		}
		if strings.Contains(l, s) {
			return
		}
	}
}

// Output is every stdout line the child printed so far, taken or not.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// Done is closed once the child has exited and its stdout has ended;
// Wait then returns at once.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the child to exit and returns how it exited (nil for
// status 0). Any number of goroutines may call it, at any time.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Kill SIGKILLs the child (on Windows, TerminateProcess) and waits for
// it. It returns how the child ended: an error for a killed child, nil
// only if it had already exited with status 0. Calling it again, or after
// Wait, is harmless.
func (p *Proc) Kill() error {
	_ = p.Cmd.Process.Kill()
	return p.Wait()
}

// AppendLine appends line and a newline to the file at path, creating it,
// in one O_APPEND write, which is atomic for a line this small: children
// that log to one file never lose or tear each other's lines.
func AppendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
