package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// Linux only: the crashed run's engine is found by /proc/PID/exe and
// waited for on a pidfd (engineProcess, waitProcessEnd in
// crash_linux_test.go).

// TestStaleLockRecoveryNeverTakesALiveLock (issue 36 item 5): a runner
// process is killed with its whole machine while its engine holds the
// state lock (s3 with DynamoDB on moto, a backend whose lock error names
// the holder under both engines), so the instance's journal holds a
// crashed run. Its lock is released by hand; then another live process
// of the same user on the same host (a plain engine run in a checkout of
// its own, parked in a provisioner) takes the state's lock, after the
// crashed run's engine is gone. A Run with WithStaleLockRecovery must
// not take that lock for the crashed run's: it fails with ErrStateLocked
// naming the holder, applies nothing, and the holder's lock is still in
// the backend afterwards, untouched.
func TestStaleLockRecoveryNeverTakesALiveLock(t *testing.T) {
	moto := testbackend.StartMoto(t)
	require.NoError(t, moto.CreateLockTable(testCtx(t)))
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		e.NeedBackend(t, "s3")
		const lock = testbackend.DynamoDBLock
		bucket := "live-lock-" + strings.ToLower(e.Name)
		require.NoError(t, moto.CreateBucket(testCtx(t), bucket))
		const key = "plat-ue2-dev/live/terraform.tfstate"
		dir := t.TempDir()
		root, cacheDir := filepath.Join(dir, "workdirs"), filepath.Join(dir, "cache")
		src := filepath.Join(dir, "src", "live")
		writeTree(t, src, map[string]string{"main.tf": gatedComponent})
		spec := func(gate string) workdir.Spec {
			v, err := json.Marshal(map[string]any{"gate": gate})
			require.NoError(t, err)
			return workdirSpec("plat-ue2-dev", "live", src, map[string][]byte{
				"backend.tf.json": moto.BackendJSON(bucket, key, lock), "terraform.tfvars.json": v})
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
		unit := Unit{Workdir: spec("")}

		// The crash: the engine holds the lock, parked in its provisioner,
		// when the machine goes.
		g := newGate(t, filepath.Join(dir, "gate"))
		started := g.started(t)
		c := startChild(t, childConfig{TF: e.Path, Root: root, Cache: cacheDir, Spec: spec(g.dir)}, nil)
		select {
		case <-started:
		case <-c.Done():
			t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
		}
		crashed, ok, err := moto.Lock(testCtx(t), bucket, key, lock)
		require.NoError(t, err)
		require.True(t, ok, "the child's engine holds the lock during its apply")
		_, tfFD := engineProcess(t, e.Path, root)
		crashMachine(t, c, root)
		waitProcessEnd(t, tfFD, time.Minute) // the crashed run's engine is gone from here on

		// The live holder: the same user on the same host, outside the
		// SDK, in a checkout of its own. It releases the crashed run's
		// stale lock by hand (as the error of a run without recovery says
		// to) and takes the lock itself, all before the next run of the
		// instance: the journal's crashed run is found only by that run.
		holderDir := filepath.Join(dir, "holder")
		writeTree(t, holderDir, map[string]string{"main.tf": gatedComponent,
			"backend.tf.json": string(moto.BackendJSON(bucket, key, lock))})
		cliConfig := filepath.Join(dir, "holder.tfrc")
		require.NoError(t, os.WriteFile(cliConfig, nil, 0o644))
		env := testenv.TerraformEnv(cliConfig)
		for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"force-unlock", "-force", "-no-color", crashed.ID}} {
			cmd := exec.Command(e.Path, args...)
			cmd.Dir, cmd.Env = holderDir, env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s: %s", args[0], out)
		}
		hg := newGate(t, filepath.Join(dir, "holder-gate"))
		holder := startLockHolder(t, e.Path, holderDir, env, hg)
		live, ok, err := moto.Lock(testCtx(t), bucket, key, lock)
		require.NoError(t, err)
		require.True(t, ok, "the holder holds the lock")
		require.NotEqual(t, crashed.ID, live.ID)
		require.Equal(t, crashed.Who, live.Who, "the holder is the crashed run's user on its host")
		require.True(t, live.Created.After(crashed.Created))

		rep, err := newRunner(WithLockTimeout(0), WithStaleLockRecovery()).Run(testCtx(t), Apply, unit)
		require.ErrorIs(t, err, ErrStateLocked, "a live holder's lock was taken for the crashed run's")
		require.ErrorContains(t, err, live.ID)
		require.ErrorContains(t, err, live.Who)
		res := rep.Results[0]
		require.Equal(t, Failed, res.Status)
		require.Empty(t, res.RecoveredLocks)
		require.NotNil(t, res.StateLock)
		require.Equal(t, live.ID, res.StateLock.ID)
		require.Equal(t, live.Who, res.StateLock.Who)
		require.NotContains(t, readFile(t, res.Log), "Apply complete!")
		still, ok, err := moto.Lock(testCtx(t), bucket, key, lock)
		require.NoError(t, err)
		require.True(t, ok, "the live holder's lock is still in the backend")
		require.Equal(t, live.ID, still.ID)

		// The holder is still the one holding it: it finishes its apply
		// and releases its own lock.
		holder.finish(t)
		_, ok, err = moto.Lock(testCtx(t), bucket, key, lock)
		require.NoError(t, err)
		require.False(t, ok, "the holder released its lock")
	})
}
