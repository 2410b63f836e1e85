//go:build unix

package runner

// Remote state backends under real processes: terraform's pg backend shared
// by two OS processes (two CI agents), and the http backend's locks, which
// outlive a killed run, under both engines.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// pgComponent records which process applied it first and which last:
// terraform_data.first keeps the writer of the first apply (its input is
// never updated), terraform_data.last takes every apply's writer. After
// two applies that each saw the other's state, first and last name both
// writers; a lost update would leave one writer in both. The gate
// resource parks the apply on a gate when var.gate is set.
const pgComponent = `
variable "writer" { type = string }
variable "gate" {
  type    = string
  default = ""
}
resource "terraform_data" "first" {
  input = var.writer
  lifecycle { ignore_changes = [input] }
}
resource "terraform_data" "last" {
  input = var.writer
}
resource "terraform_data" "gate" {
  triggers_replace = timestamp()
  provisioner "local-exec" {
    command = var.gate == "" ? "true" : "echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}
output "first" { value = terraform_data.first.input }
output "last" { value = terraform_data.last.input }
`

// watchWriter keeps everything written to it and closes seen once it
// contains want; lines may arrive in pieces from a pipe.
type watchWriter struct {
	want string
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	seen chan struct{}
}

func newWatchWriter(want string) *watchWriter {
	return &watchWriter{want: want, seen: make(chan struct{})}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startBackendsChild starts the test binary as a second CI agent (see
// backendsChild) applying cfg, in a process group of its own, its stderr
// to stderr. When the test ends, the group is killed.
func startBackendsChild(t *testing.T, cfg backendsChildConfig, stderr *watchWriter) *childproc.Proc {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	c := childproc.Start(t, backendsChildRole, childproc.WithEnv(childConfigEnv+"="+string(b)), childproc.WithStderr(stderr),
		childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}), childproc.WithTimeout(childTimeout))
	t.Cleanup(func() {
		_ = syscall.Kill(-c.PID(), syscall.SIGKILL)
		<-c.Done()
	})
	return c
}

// backendsResults waits for the child c to exit, requires that it
// succeeded, and returns its results by unit.
func backendsResults(t *testing.T, c *childproc.Proc, stderr *watchWriter) map[string]backendsChildResult {
	t.Helper()
	err := c.Wait()
	out := c.Output()
	require.NoError(t, err, "child stdout:\n%s\nchild stderr:\n%s", out, stderr.String())
	i := strings.LastIndex(out, backendsChildResultPrefix)
	require.GreaterOrEqual(t, i, 0, "no results from the child:\n%s", out)
	line, _, _ := strings.Cut(out[i+len(backendsChildResultPrefix):], "\n")
	var rs []backendsChildResult
	require.NoError(t, json.Unmarshal([]byte(line), &rs))
	m := map[string]backendsChildResult{}
	for _, r := range rs {
		m[r.Unit] = r
	}
	return m
}

// TestPostgresTwoProcesses is two CI agents, each with its own workdir
// root, plugin cache and checkout, applying the same four instances (one
// pg schema each) at once against one PostgreSQL. Process A (this one)
// parks its apply of pg0 on a gate while holding pg0's state lock; process
// B (a re-executed test binary) must then report, in one line, that it
// waits for that lock, and only applies once A is released. Every run
// succeeds, and every final state holds both agents' writes.
func TestPostgresTwoProcesses(t *testing.T) {
	tf := testenv.Terraform(t)
	pg := testbackend.StartPostgres(t)
	dir := t.TempDir()
	g := newGate(t, filepath.Join(dir, "gate"))
	schemas := []string{"pg0", "pg1", "pg2", "pg3"}
	const gated = "pg0"
	const stack = "plat-ue2-dev"

	// agent returns one agent's units: its own checkout of the component,
	// the same stacks and instances, the same schemas.
	agent := func(name string, gate string) []backendsChildUnit {
		src := filepath.Join(dir, name, "src", "app")
		require.NoError(t, os.MkdirAll(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(pgComponent), 0o644))
		var units []backendsChildUnit
		for _, s := range schemas {
			vars := map[string]any{"writer": name}
			if s == gated && gate != "" {
				vars["gate"] = gate
			}
			v, err := json.Marshal(vars)
			require.NoError(t, err)
			units = append(units, backendsChildUnit{
				Spec: workdirSpec(stack, "app/"+s, src, map[string][]byte{
					"backend.tf.json":       pg.BackendJSON(s),
					"terraform.tfvars.json": v,
				}),
				// Names the agent's sessions in the server's log.
				Env: map[string]string{"PGAPPNAME": name + "-" + s},
			})
		}
		return units
	}
	gatedID := stack + "/app/" + gated

	// Agent A: this process.
	aUnits := agent("a", g.dir)
	wdA, err := workdir.New(filepath.Join(dir, "a", "workdirs"))
	require.NoError(t, err)
	cacheA, err := pluginc.Open(filepath.Join(dir, "a", "cache"))
	require.NoError(t, err)
	rA, err := New(WithWorkdirs(wdA), WithPluginCache(cacheA), WithTerraform(tf), WithLockTimeout(2*time.Minute))
	require.NoError(t, err)
	units := make([]Unit, len(aUnits))
	for i, u := range aUnits {
		units[i] = Unit{Workdir: u.Spec, Env: u.Env}
	}
	type result struct {
		rep *Report
		err error
	}
	aDone := make(chan result, 1)
	ctx, cancel := context.WithCancel(testCtx(t))
	aExited := make(chan struct{})
	started := g.started(t)
	go func() {
		defer close(aExited)
		rep, err := rA.Run(ctx, Apply, units...)
		aDone <- result{rep, err}
	}()
	t.Cleanup(func() {
		cancel()
		if g.hasReader() {
			g.release(t)
		}
		<-aExited
	})
	select {
	case <-started:
	case res := <-aDone:
		t.Fatalf("agent A ended before its gated apply: %v", res.err)
	}

	// Agent B: another OS process, its own root and cache.
	waiting := newWatchWriter("[" + gatedID + "] tfisolate: apply: state locked")
	b := startBackendsChild(t, backendsChildConfig{TF: tf, Root: filepath.Join(dir, "b", "workdirs"),
		Cache: filepath.Join(dir, "b", "cache"), LockTimeout: 2 * time.Minute, Units: agent("b", "")}, waiting)
	select {
	case <-waiting.seen:
	case <-b.Done():
		t.Fatalf("agent B ended without meeting A's lock on %s: %v\n%s", gated, b.Wait(), waiting.String())
	}
	// What B waits for is A's terraform, parked on the gate: the server
	// names it as the holder of a lock.
	locks, err := pg.AdvisoryLocks(testCtx(t))
	require.NoError(t, err)
	heldByA := false
	for _, l := range locks {
		heldByA = heldByA || l.Application == "a-"+gated
	}
	require.True(t, heldByA, "agent A holds %s's state lock while B waits: %+v", gated, locks)
	g.release(t)

	resA := <-aDone
	require.NoError(t, resA.err)
	for _, res := range resA.rep.Results {
		require.Equal(t, Succeeded, res.Status, "agent A %s: %v", res.Unit, res.Err)
	}
	resB := backendsResults(t, b, waiting)
	require.Len(t, resB, len(schemas))
	for id, res := range resB {
		require.Equal(t, "succeeded", res.Status, "agent B %s: %s", id, res.Err)
	}

	// B waited for A's lock on the gated instance: counted, and logged as
	// one line per wait, never terraform's lock error block.
	gb := resB[gatedID]
	require.Positive(t, gb.LockWait, "agent B waited for the gated instance's state lock")
	log, err := os.ReadFile(gb.Log)
	require.NoError(t, err)
	require.Contains(t, string(log), "tfisolate: apply: state locked")
	require.Contains(t, string(log), "state lock acquired after waiting")
	require.NotContains(t, string(log), "Error acquiring the state lock")
	require.NotContains(t, waiting.String(), "Error acquiring the state lock")
	// The server saw B try the lock on the gated schema.
	lctx, lcancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer lcancel()
	_, err = pg.WaitLog(lctx, func(line string) bool {
		return strings.HasPrefix(line, "[b-"+gated+"] ") && strings.Contains(line, "pg_try_advisory_lock")
	})
	require.NoError(t, err, "agent B's terraform never tried the lock of %s", gated)

	// Every final state holds both agents' writes: first and last name
	// both writers; on the gated instance A came first.
	for _, s := range schemas {
		rows, err := pg.Query(testCtx(t), "SELECT data FROM "+s+".states WHERE name = 'default'")
		require.NoError(t, err)
		require.Len(t, rows, 1, "schema %s", s)
		var st struct {
			Serial  int
			Outputs map[string]struct{ Value string }
		}
		require.NoError(t, json.Unmarshal([]byte(rows[0][0]), &st), "schema %s", s)
		first, last := st.Outputs["first"].Value, st.Outputs["last"].Value
		require.ElementsMatch(t, []string{"a", "b"}, []string{first, last},
			"schema %s: first=%q last=%q: an agent's apply did not see the other's state", s, first, last)
		if s == gated {
			require.Equal(t, "a", first, "A held %s's lock first", s)
			require.Equal(t, "b", last)
		}
	}
}

// TestHTTPStaleLock kills a runner process (its whole process group, then
// everything its run left) while its terraform holds the http backend's
// lock, under both engines. The lock stays in the server; the next run
// names it and says how to release it; ForceUnlock releases it; and
// WithStaleLockRecovery releases it by itself only where the engine
// reports the holder (OpenTofu, Terraform 1.15 and later), never a lock
// someone else planted.
func TestHTTPStaleLock(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		testStart := time.Now()
		srv := testbackend.StartHTTPState(t)
		dir := t.TempDir()
		root, cacheDir := filepath.Join(dir, "workdirs"), filepath.Join(dir, "cache")
		src := filepath.Join(dir, "src", "gated")
		require.NoError(t, os.MkdirAll(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(gatedComponent), 0o644))
		const name = "plat-ue2-dev-gated"
		spec := func(gate string) workdir.Spec {
			v, err := json.Marshal(map[string]any{"gate": gate})
			require.NoError(t, err)
			return workdirSpec("plat-ue2-dev", "gated", src, map[string][]byte{
				"backend.tf.json": srv.BackendJSON(name), "terraform.tfvars.json": v})
		}
		unit := Unit{Workdir: spec("")}

		// crash runs the instance's apply in a child runner, parks it on a
		// fresh gate, and kills it while its terraform holds the lock.
		crashes := 0
		crash := func() (testbackend.LockInfo, int) {
			t.Helper()
			crashes++
			g := newGate(t, filepath.Join(dir, fmt.Sprintf("gate%d", crashes)))
			started := g.started(t)
			c := startChild(t, childConfig{TF: e.Path, Root: root, Cache: cacheDir, Spec: spec(g.dir)}, nil)
			select {
			case <-started:
			case <-c.Done():
				t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
			}
			held, ok := srv.Lock(name)
			require.True(t, ok, "the child's terraform holds the lock during its apply")
			require.NotEmpty(t, held.ID)
			pid := c.PID()
			// A crashed machine takes all the agent's processes with it
			// at once: terraform (in a process group of its own) and its
			// provisioner, with no interrupt that would release the lock.
			crashMachine(t, c, root)
			still, ok := srv.Lock(name)
			require.True(t, ok, "the lock outlives the killed run")
			require.Equal(t, held.ID, still.ID)
			return held, pid
		}
		newRunner := func(opts ...Option) *Runner {
			wd, err := workdir.New(root)
			require.NoError(t, err)
			cache, err := pluginc.Open(cacheDir)
			require.NoError(t, err)
			r, err := New(append([]Option{WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(e.Path)}, opts...)...)
			require.NoError(t, err)
			return r
		}
		// The engine's http backend names the holder with its whole lock
		// info (OpenTofu, and Terraform since 1.15.0; before, Terraform
		// put the requester's own info beside the holder's ID).
		info, err := engine.Detect(testCtx(t), e.Path)
		require.NoError(t, err)
		namesHolder := e.Kind == engine.OpenTofu || !info.Version.Core().LessThan(version.Must(version.NewVersion("1.15.0")))

		// a. No patience: ErrStateLocked naming the lock and how to release it.
		held, _ := crash()
		r := newRunner(WithLockTimeout(0))
		rep, err := r.Run(testCtx(t), Apply, unit)
		require.ErrorIs(t, err, ErrStateLocked)
		require.ErrorContains(t, err, held.ID)
		require.ErrorContains(t, err, "force-unlock -force -no-color -- "+held.ID)
		res := rep.Results[0]
		require.Equal(t, Failed, res.Status)
		require.NotNil(t, res.StateLock)
		require.Equal(t, held.ID, res.StateLock.ID)
		if namesHolder {
			// The holder's lock info: the server's.
			require.Equal(t, held.Who, res.StateLock.Who)
			require.True(t, held.Created.Equal(res.StateLock.Created), "created %s, reported %s", held.Created, res.StateLock.Created)
			require.Equal(t, held.Operation, res.StateLock.Operation)
		}
		_, ok := srv.Lock(name)
		require.True(t, ok, "a failed run leaves the lock alone")

		// The printed command works as it is, in a shell: a line of its own.
		m := regexp.MustCompile(`(?m)^    (cd .*)$`).FindStringSubmatch(err.Error())
		require.NotNil(t, m, "the error prints a command: %v", err)
		out, cerr := exec.Command("sh", "-c", m[1]).CombinedOutput()
		require.NoError(t, cerr, "%s\n%s", m[1], out)
		_, ok = srv.Lock(name)
		require.False(t, ok, "the printed command released the lock")

		// b. ForceUnlock releases it; the next apply succeeds.
		held, _ = crash()
		require.NoError(t, r.ForceUnlock(testCtx(t), unit, held.ID))
		_, ok = srv.Lock(name)
		require.False(t, ok, "ForceUnlock released the lock")
		rep, err = r.Run(testCtx(t), Apply, unit)
		require.NoError(t, err)
		require.Equal(t, Succeeded, rep.Results[0].Status)
		st, ok := srv.State(name)
		require.True(t, ok)
		require.Contains(t, string(st), "terraform_data")

		// c. Recovery of a lock the journal proves the crashed run left.
		held, pid := crash()
		rec := newRunner(WithLockTimeout(0), WithStaleLockRecovery())
		rep, err = rec.Run(testCtx(t), Apply, unit)
		res = rep.Results[0]
		if namesHolder {
			require.NoError(t, err)
			require.Equal(t, Succeeded, res.Status)
			require.Len(t, res.RecoveredLocks, 1)
			require.Equal(t, held.ID, res.RecoveredLocks[0].ID)
			log, err := os.ReadFile(res.Log)
			require.NoError(t, err)
			require.Contains(t, string(log), fmt.Sprintf("state lock %s was left by this instance's run of pid %d", held.ID, pid))
			require.Contains(t, string(log), "never finished")
			_, ok = srv.Lock(name)
			require.False(t, ok, "the recovered lock is released")
		} else {
			// Terraform before 1.15's http backend names the holder only
			// by ID: no proof, so the lock is waited for (not at all
			// here) and kept.
			require.ErrorIs(t, err, ErrStateLocked)
			require.Equal(t, Failed, res.Status)
			require.Empty(t, res.RecoveredLocks)
			require.NotNil(t, res.StateLock)
			require.Equal(t, held.ID, res.StateLock.ID)
			still, ok := srv.Lock(name)
			require.True(t, ok, "an unproven lock is never released")
			require.Equal(t, held.ID, still.ID)
			srv.ClearLock(name)
		}

		// A lock planted by someone else is never recovered, though the
		// journal holds crashed runs: another holder during the crashed
		// run, or this user and host before any crashed run began.
		for _, tc := range []struct {
			name string
			lock testbackend.LockInfo
		}{
			{"another holder", testbackend.LockInfo{ID: "planted-another-holder", Operation: "OperationTypeApply",
				Who: "deployer@ci-agent-7", Version: held.Version, Created: held.Created}},
			{"before the crashed runs", testbackend.LockInfo{ID: "planted-before-crash", Operation: "OperationTypeApply",
				Who: held.Who, Version: held.Version, Created: testStart.Add(-time.Hour).UTC()}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				srv.SetLock(name, tc.lock)
				before := srv.Counters(name)
				rep, err := rec.Run(testCtx(t), Apply, unit)
				require.ErrorIs(t, err, ErrStateLocked)
				res := rep.Results[0]
				require.Equal(t, Failed, res.Status)
				require.Empty(t, res.RecoveredLocks)
				require.NotNil(t, res.StateLock)
				require.Equal(t, tc.lock.ID, res.StateLock.ID)
				if namesHolder {
					require.Equal(t, tc.lock.Who, res.StateLock.Who)
				}
				still, ok := srv.Lock(name)
				require.True(t, ok, "a lock this SDK did not leave is never released")
				require.Equal(t, tc.lock.ID, still.ID)
				after := srv.Counters(name)
				require.Equal(t, before.Unlocks, after.Unlocks, "no unlock was even tried")
				srv.ClearLock(name)
			})
		}
	})
}
