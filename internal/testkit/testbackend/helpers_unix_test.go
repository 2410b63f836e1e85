//go:build unix

package testbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// mainTF is the root module every test applies: builtin terraform_data
// resources only (no provider to install), each with a local-exec
// provisioner that blocks on var.gate when it is set.
const mainTF = `
variable "gate" {
  type    = string
  default = ""
}

resource "terraform_data" "seed" {
  input = "seed"
}

resource "terraform_data" "a" {
  input = "a"
  provisioner "local-exec" {
    command = var.gate == "" ? "true" : "cat '${var.gate}'"
  }
}

resource "terraform_data" "b" {
  input = "b"
}
`

// tfWorld is what running terraform needs: the binary, an empty CLI config
// (nothing of the user's), and a deadline.
type tfWorld struct {
	t   *testing.T
	tf  string
	cli string
	ctx context.Context
}

func newTFWorld(t *testing.T) *tfWorld {
	t.Helper()
	w := &tfWorld{t: t, tf: testenv.Terraform(t), cli: filepath.Join(t.TempDir(), "cli.tfrc.json")}
	require.NoError(t, os.WriteFile(w.cli, []byte("{}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	w.ctx = ctx
	return w
}

// dir writes the root module and the given backend into a fresh dir.
func (w *tfWorld) dir(backendJSON []byte) string {
	w.t.Helper()
	d := w.t.TempDir()
	require.NoError(w.t, os.WriteFile(filepath.Join(d, "main.tf"), []byte(mainTF), 0o644))
	require.NoError(w.t, os.WriteFile(filepath.Join(d, "backend.tf.json"), backendJSON, 0o644))
	return d
}

// tfProc is one terraform process, in its own process group so that a kill
// reaches the provisioner's shell too.
type tfProc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// start starts terraform in dir with extra environment.
func (w *tfWorld) start(dir string, env []string, args ...string) *tfProc {
	w.t.Helper()
	p := &tfProc{done: make(chan struct{})}
	p.cmd = exec.CommandContext(w.ctx, w.tf, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(testenv.TerraformEnv(w.cli), env...)
	p.cmd.Env = append(p.cmd.Env, "NO_COLOR=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = func() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(w.t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// wait waits for the process and returns its output and exit error.
func (p *tfProc) wait() (string, error) {
	<-p.done
	return ansi.ReplaceAllString(p.out.String(), ""), p.err
}

// flat undoes terraform's word wrapping of diagnostics (it wraps at 78
// columns and frames the lines with "│"), so a message can be matched
// whatever its length.
func flat(out string) string {
	return strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(out)), " ")
}

// ansi matches terraform's colour codes, which it prints whatever NO_COLOR
// says.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// kill kills the process group with SIGKILL, as a crash would, and waits
// for terraform to end.
func (p *tfProc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
	<-p.done
}

// run runs terraform to completion.
func (w *tfWorld) run(dir string, env []string, args ...string) (string, error) {
	w.t.Helper()
	return w.start(dir, env, args...).wait()
}

// mustRun runs terraform and fails the test if it fails.
func (w *tfWorld) mustRun(dir string, env []string, args ...string) string {
	w.t.Helper()
	out, err := w.run(dir, env, args...)
	require.NoError(w.t, err, "terraform %s in %s:\n%s", strings.Join(args, " "), dir, out)
	return out
}

// gate is a FIFO a provisioner blocks on ("cat FIFO"): opening it for
// writing returns once the provisioner has opened it (so terraform is inside
// apply, holding the state lock), and closing it lets the provisioner end.
type gate struct {
	path string
	w    *os.File
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{path: filepath.Join(t.TempDir(), "gate")}
	require.NoError(t, unix.Mkfifo(g.path, 0o600))
	t.Cleanup(func() {
		if g.w != nil {
			_ = g.w.Close()
		}
	})
	return g
}

// reached blocks until the provisioner holds the gate, or fails the test if
// the terraform process p ends first or the deadline passes.
func (g *gate) reached(ctx context.Context, t *testing.T, p *tfProc) {
	t.Helper()
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(g.path, os.O_WRONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		require.NoError(t, o.err)
		g.w = o.f
		return
	case <-p.done:
	case <-ctx.Done():
	}
	// Unblock the opener with a reader of our own, so no goroutine leaks.
	if r, err := os.OpenFile(g.path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		if o := <-ch; o.f != nil {
			_ = o.f.Close()
		}
		_ = r.Close()
	}
	select {
	case <-p.done:
		t.Fatalf("terraform ended before it reached the gate (%v):\n%s", p.err, p.out.String())
	default:
		t.Fatalf("terraform never reached the gate: %v", ctx.Err())
	}
}

// release lets the provisioner finish.
func (g *gate) release(t *testing.T) {
	t.Helper()
	require.NotNil(t, g.w, "gate released before it was reached")
	require.NoError(t, g.w.Close())
	g.w = nil
}

// stateResources lists the resource addresses in a state document.
func stateResources(t *testing.T, state []byte) []string {
	t.Helper()
	var doc struct {
		Resources []struct {
			Mode, Type, Name string
		}
	}
	require.NoError(t, json.Unmarshal(state, &doc), "state:\n%s", state)
	var addrs []string
	for _, r := range doc.Resources {
		addrs = append(addrs, r.Type+"."+r.Name)
	}
	return addrs
}
