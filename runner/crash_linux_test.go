package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// crashComponent creates terraform_data.first, then terraform_data.slow,
// whose provisioner waits on a gate when var.gate is set.
const crashComponent = `
variable "gate" { type = string }
resource "terraform_data" "first" { input = "done" }
resource "terraform_data" "slow" {
  depends_on = [terraform_data.first]
  provisioner "local-exec" {
    command = var.gate == "" ? "true" : "echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}
`

// crashSetup is a component, a gate and a unit of it whose state is at
// state, for a child host to apply.
type crashSetup struct {
	dir, root, cache, state string
	g                       gate
	spec                    workdir.Spec
}

func newCrashSetup(t *testing.T) crashSetup { return newCrashSetupOf(t, crashComponent) }

func newCrashSetupOf(t *testing.T, component string) crashSetup {
	t.Helper()
	dir := t.TempDir()
	s := crashSetup{dir: dir, root: filepath.Join(dir, "workdirs"), cache: filepath.Join(dir, "cache"), state: filepath.Join(dir, "crash.tfstate")}
	src := filepath.Join(dir, "src", "crash")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(component), 0o644))
	s.g = newGate(t, filepath.Join(dir, "gate"))
	t.Cleanup(func() { killMentioning(t, s.root) })
	s.spec = workdirSpec("plat-ue2-dev", "crash", src, files(t, map[string]any{"gate": s.g.dir}, s.state))
	return s
}

// engineProcess returns the PID of the one running process whose
// executable is bin and whose environment mentions root, and a pidfd on
// it.
func engineProcess(t *testing.T, bin, root string) (int, int) {
	t.Helper()
	want, err := filepath.EvalSymlinks(bin)
	require.NoError(t, err)
	var pids []int
	for _, p := range processesMentioning(t, root) {
		pid, err := strconv.Atoi(strings.Fields(p)[0])
		require.NoError(t, err)
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil && exe == want {
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, 1, "engine processes of %s", bin)
	fd, err := unix.PidfdOpen(pids[0], 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return pids[0], fd
}

// waitProcessEnd waits, at most bound, for the process of pidfd to end.
func waitProcessEnd(t *testing.T, fd int, bound time.Duration) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(bound.Milliseconds()))
		if err == syscall.EINTR {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, "the engine still runs after %s", bound)
		return
	}
}

// parentPID reads pid's parent from /proc/PID/stat (the field after the
// state, which follows the command name in parentheses).
func parentPID(pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return strconv.Atoi(f[1])
}

// pidfdExited reports whether the process of pidfd fd has ended, without
// waiting.
func pidfdExited(fd int) bool {
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return err == nil && n > 0
}

// keptEngineOutputs returns the stdout files engines left under root.
func keptEngineOutputs(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == engineDir && strings.HasSuffix(p, ".out") {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// requireInterrupted asserts that an engine's output shows the host
// watcher's SIGINT. The watcher signals the engine's whole process group,
// as a terminal's Ctrl-C does, so a provisioner's child gets it too: when
// that child dies of it first and the apply ends with the provisioner's
// error before the engine reads its own signal, the engine never says
// "Interrupt received", and the provisioner's "signal: interrupt" shows
// it (a SIGKILL shows neither: a killed engine writes nothing more).
func requireInterrupted(t *testing.T, out string) {
	t.Helper()
	require.True(t, strings.Contains(out, "Interrupt received") || strings.Contains(out, "signal: interrupt"),
		"the engine's output shows no interrupt:\n%s", out)
}

// TestHostDeathInterruptsEngine SIGKILLs a host process (a child runner)
// while its apply is parked in a provisioner, under both engines. The
// engine gets SIGINT, not SIGKILL: it stops its provisioner, writes a
// state that records what it did (the first resource, the second
// tainted) and exits; its output, written to a file of its own, outlives
// the host and says it was interrupted.
func TestHostDeathInterruptsEngine(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		s := newCrashSetup(t)
		started := s.g.started(t)
		c := startChild(t, childConfig{TF: e.Path, Root: s.root, Cache: s.cache, Spec: s.spec}, nil)
		select {
		case <-started:
		case <-c.Done():
			t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
		}
		_, fd := engineProcess(t, e.Path, s.root)
		require.NoError(t, syscall.Kill(-c.PID(), syscall.SIGKILL))
		<-c.Done()
		waitProcessEnd(t, fd, 2*time.Minute)

		outs := keptEngineOutputs(t, s.root)
		require.Len(t, outs, 1, "the crashed run's engine output is kept")
		out := readFile(t, outs[0])
		require.False(t, s.g.hasReader(), "the engine left its provisioner running: it was killed, not interrupted; its output:\n%s", out)
		requireInterrupted(t, out)

		b, err := os.ReadFile(s.state)
		require.NoError(t, err)
		var st struct {
			Lineage   string
			Resources []struct {
				Name      string
				Instances []struct{ Status string }
			}
		}
		require.NoError(t, json.Unmarshal(b, &st), "state:\n%s", b)
		require.NotEmpty(t, st.Lineage)
		got := map[string]string{}
		for _, r := range st.Resources {
			for _, in := range r.Instances {
				got[r.Name] = in.Status
			}
		}
		require.Equal(t, map[string]string{"first": "", "slow": "tainted"}, got, "state:\n%s\nengine output:\n%s", b, out)
	})
}

// writeShim writes an engine shim like a version manager's: a shell
// script that runs the real engine as its child (not exec). The first
// apply it runs then holds on until hold is released (as a version
// manager's post-processing would; it ignores SIGINT, which terraform,
// a Go program, handles anyway), so the shim, the engine the runner
// started, outlives its terraform.
func writeShim(t *testing.T, dir, real string, hold gate) string {
	t.Helper()
	p := filepath.Join(dir, "shim-bin", filepath.Base(real))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	script := "#!/bin/sh\ntrap '' INT\n\"" + real + "\" \"$@\"\nst=$?\n" +
		"if [ \"$1\" = apply ] && mkdir " + hold.dir + "/held 2>/dev/null; then echo started > " + hold.dir + "/started; cat " + hold.dir + "/release; fi\n" +
		"exit $st\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// TestNextRunWaitsForCrashedEngine runs the engine through a shim (a
// shell script running terraform as its child, then holding on), under
// both engines, and SIGKILLs the host while its apply is parked in a
// provisioner. The interrupt reaches terraform through the shim (its
// process group): terraform stops and writes its state; the shim runs on.
// A next Run allowed no wait fails with an *EngineRunningError naming the
// shim's PID and kills nothing. A next Run with the default wait sends an
// event naming the PID, waits (the test lets the shim go when it sees
// that event), and runs: the crashed run's first resource in the state,
// the crash in Result.Crashed, no state lock met.
func TestNextRunWaitsForCrashedEngine(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		s := newCrashSetup(t)
		hold := newGate(t, filepath.Join(s.dir, "hold"))
		shim := writeShim(t, s.dir, e.Path, hold)
		started := s.g.started(t)
		c := startChild(t, childConfig{TF: shim, Root: s.root, Cache: s.cache, Spec: s.spec}, nil)
		select {
		case <-started:
		case <-c.Done():
			t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
		}
		tfPID, tfFD := engineProcess(t, e.Path, s.root)
		shimPID, err := parentPID(tfPID)
		require.NoError(t, err)
		held := hold.started(t)
		require.NoError(t, syscall.Kill(-c.PID(), syscall.SIGKILL))
		<-c.Done()
		// Interrupted, terraform stops; the shim holds on.
		waitProcessEnd(t, tfFD, 2*time.Minute)
		select {
		case <-held:
		case <-time.After(time.Minute):
			t.Fatal("the shim did not hold on after its terraform ended")
		}
		require.False(t, s.g.hasReader(), "terraform was not interrupted")

		newRunner := func(opts ...Option) *Runner {
			wd, err := workdir.New(s.root)
			require.NoError(t, err)
			r, err := New(append([]Option{WithWorkdirs(wd), WithTerraform(shim), WithLockTimeout(0)}, opts...)...)
			require.NoError(t, err)
			return r
		}
		// The next apply runs through the shim without holding on.
		s.spec.Files["terraform.tfvars.json"] = []byte(`{"gate": ""}`)
		u := Unit{Workdir: s.spec}

		// No wait allowed: refused, nothing killed.
		rep, err := newRunner(WithCrashedEngineWait(0), WithStaleLockRecovery()).Run(testCtx(t), Apply, u)
		require.ErrorIs(t, err, ErrEngineRunning)
		var ere *EngineRunningError
		require.ErrorAs(t, err, &ere)
		require.Equal(t, shimPID, ere.PID)
		require.ErrorContains(t, err, fmt.Sprintf("kill -INT %d", shimPID))
		res := rep.Results[0]
		require.Len(t, res.Crashed, 1)
		require.Equal(t, shimPID, res.Crashed[0].EnginePID)
		require.True(t, hold.hasReader(), "the crashed run's engine was killed")

		// The default wait: an event names the PID; the shim is let go
		// then, and the run goes on.
		var waitEvents []int
		r := newRunner(WithEvents(func(ev Event) {
			if ev.WaitPID != 0 {
				waitEvents = append(waitEvents, ev.WaitPID)
				hold.release(t)
			}
		}))
		rep, err = r.Run(testCtx(t), Apply, u)
		require.NoError(t, err)
		require.Equal(t, []int{shimPID}, waitEvents)
		res = rep.Results[0]
		require.Len(t, res.Crashed, 1)
		require.Positive(t, res.Crashed[0].Waited)
		require.Nil(t, res.StateLock, "no state lock was met")
		require.Contains(t, stateResources(t, s.state), "terraform_data.first")
		require.Contains(t, readFile(t, res.Log), fmt.Sprintf("(pid %d), started by the run that never finished", shimPID))
	})
}

// backgroundComponent's provisioner leaves a background job in
// terraform's process group (ignoring SIGINT, as an asynchronous command
// of a non-interactive sh does), then parks on the gate.
const backgroundComponent = `
variable "gate" { type = string }
resource "terraform_data" "bg" {
  provisioner "local-exec" {
    command = "cat ${var.gate}/bg & echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}
`

// TestCrashLeftoversReapedFirst SIGKILLs a host, under both engines,
// while its apply is parked in a provisioner that left a background job
// in terraform's process group; the interrupt stops terraform, and the
// job runs on. The next Run of the instance kills that job right after it
// takes the instance lock, finds it through the journal's record of the
// engine (its process group), and reports it, with the crashed run and
// its kept engine output, in Result.Crashed and the JSON report; the log
// names the job by PID and executable only, never its command line.
func TestCrashLeftoversReapedFirst(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		s := newCrashSetupOf(t, backgroundComponent)
		require.NoError(t, syscall.Mkfifo(filepath.Join(s.g.dir, "bg"), 0o644))
		started := s.g.started(t)
		c := startChild(t, childConfig{TF: e.Path, Root: s.root, Cache: s.cache, Spec: s.spec}, nil)
		select {
		case <-started:
		case <-c.Done():
			t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
		}
		_, tfFD := engineProcess(t, e.Path, s.root)
		// The provisioner's shell announces itself once it has forked the
		// background job, which may not have become cat yet: look until
		// it has (a condition, with a bound).
		bgPID := 0
		for deadline := time.Now().Add(time.Minute); bgPID == 0; {
			for _, p := range processesMentioning(t, s.root) {
				if strings.HasSuffix(strings.TrimSpace(p), " cat "+s.g.dir+"/bg") {
					bgPID, _ = strconv.Atoi(strings.Fields(p)[0])
				}
			}
			if bgPID == 0 {
				require.True(t, time.Now().Before(deadline), "the background job never became cat")
				<-time.After(10 * time.Millisecond) // look again
			}
		}
		bgFD, err := unix.PidfdOpen(bgPID, 0)
		require.NoError(t, err)
		t.Cleanup(func() { _ = unix.Close(bgFD) })
		require.NoError(t, syscall.Kill(-c.PID(), syscall.SIGKILL))
		<-c.Done()
		waitProcessEnd(t, tfFD, 2*time.Minute)
		require.NoError(t, unix.PidfdSendSignal(bgFD, 0, nil, 0), "the background job outlived terraform")

		wd, err := workdir.New(s.root)
		require.NoError(t, err)
		// Gone before the first terraform of the run starts (init's event).
		goneFirst := map[Phase]bool{}
		r, err := New(WithWorkdirs(wd), WithTerraform(e.Path), WithEvents(func(ev Event) {
			if ev.Phase != PhaseQueued && ev.Phase != PhasePrepare && ev.Phase != PhaseDone {
				goneFirst[ev.Phase] = pidfdExited(bgFD)
			}
		}))
		require.NoError(t, err)
		rep, err := r.Run(testCtx(t), Validate, Unit{Workdir: s.spec})
		require.NoError(t, err)
		require.Equal(t, map[Phase]bool{PhaseInit: true, PhaseValidate: true}, goneFirst)
		res := rep.Results[0]
		require.Len(t, res.Crashed, 1)
		cr := res.Crashed[0]
		require.Equal(t, Apply.String(), cr.Command)
		require.Equal(t, []string{fmt.Sprintf("%d cat", bgPID)}, cr.Killed)
		require.NotEmpty(t, cr.EngineOutput)
		requireInterrupted(t, readFile(t, cr.EngineOutput))
		log := readFile(t, res.Log)
		require.Contains(t, log, fmt.Sprintf("killed leftover process %d cat", bgPID))
		require.NotContains(t, log, s.g.dir+"/bg", "a leftover's command line was logged")

		b, err := json.Marshal(rep)
		require.NoError(t, err)
		require.Contains(t, string(b), fmt.Sprintf(`"killed":["%d cat"]`, bgPID))
		require.Contains(t, string(b), `"crashed_runs":[{"pid":`)
	})
}

// TestThreadChurnNeverSignals applies, under both engines, in a host
// whose goroutines keep locking OS threads and ending without unlocking
// them (the runtime then ends those threads), while the apply is parked
// in a provisioner and after: terraform is never signalled (the kernel's
// parent-death signal would follow the thread that started it) and the
// apply succeeds. A guard, not a reproduction: the earlier code passes it
// too most of the time, since the goroutine that started terraform
// usually waits for it in a blocking wait on the very thread that forked
// it, which the runtime cannot end meanwhile; the runs that failed did so
// when the goroutine moved between the fork and the wait.
func TestThreadChurnNeverSignals(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		s := newCrashSetup(t)
		wd, err := workdir.New(s.root)
		require.NoError(t, err)
		churn := func(n int) {
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				}()
			}
			wg.Wait()
		}
		// Churn around every terraform the run starts, and while the apply
		// is parked.
		r, err := New(WithWorkdirs(wd), WithTerraform(e.Path), WithEvents(func(Event) { churn(16) }))
		require.NoError(t, err)
		started := s.g.started(t)
		type out struct {
			rep *Report
			err error
		}
		done := make(chan out, 1)
		go func() {
			rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: s.spec})
			done <- out{rep, err}
		}()
		select {
		case <-started:
		case o := <-done:
			t.Fatalf("the run ended before its provisioner: %v", o.err)
		}
		churn(256)
		s.g.release(t)
		o := <-done
		require.NoError(t, o.err)
		require.Equal(t, Succeeded, o.rep.Results[0].Status)
	})
}
