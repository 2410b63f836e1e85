//go:build unix

package testbackend

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// childSchemaEnv names the schema TestPostgresChild, run as a child
// process by SharedWithAChildProcess, applies to.
const childSchemaEnv = "TFISOLATE_TESTBACKEND_CHILD_SCHEMA"

// lockAttempt matches the log line of one pg-backend lock attempt by the
// session named app, once the workspace row exists: a single statement
// whose result decides the attempt, logged when it has completed.
func lockAttempt(app string) func(string) bool {
	return func(line string) bool {
		return strings.HasPrefix(line, "["+app+"] ") &&
			strings.Contains(line, "execute <unnamed>: SELECT states.id, pg_try_advisory_lock(states.id)")
	}
}

// holders lists the sessions holding the given locks.
func holders(locks []AdvisoryLock) []string {
	var apps []string
	for _, l := range locks {
		apps = append(apps, l.Application)
	}
	return apps
}

// keys lists the keys of the given locks.
func keys(locks []AdvisoryLock) []int64 {
	var ks []int64
	for _, l := range locks {
		ks = append(ks, l.Key)
	}
	return ks
}

// countLines counts the lines of log that match.
func countLines(log string, match func(string) bool) int {
	n := 0
	for l := range strings.SplitSeq(log, "\n") {
		if match(l) {
			n++
		}
	}
	return n
}

// pgState reads the default workspace's state terraform wrote in schema.
func pgState(ctx context.Context, t *testing.T, pg *Postgres, schema string) []byte {
	t.Helper()
	rows, err := pg.Query(ctx, "SELECT data FROM "+schema+".states WHERE name = 'default'")
	require.NoError(t, err)
	require.Len(t, rows, 1, "one default workspace in schema %s", schema)
	return []byte(rows[0][0])
}

// seeded prepares two dirs on one schema and writes a first state, so the
// workspace row exists and every later lock attempt is one statement.
func seeded(t *testing.T, w *tfWorld, pg *Postgres, schema string) (a, b string) {
	t.Helper()
	a, b = w.dir(pg.BackendJSON(schema)), w.dir(pg.BackendJSON(schema))
	w.mustRun(a, nil, "init", "-input=false")
	w.mustRun(b, nil, "init", "-input=false")
	w.mustRun(a, nil, "apply", "-auto-approve", "-input=false", "-target=terraform_data.seed")
	return a, b
}

func TestPostgres(t *testing.T) {
	pg := StartPostgres(t)
	require.False(t, pg.Shared())
	// The subtests run one at a time: terraform's pg backend takes one
	// database-wide advisory lock (-1) while it creates any workspace, so
	// a first apply in one schema can make a lock attempt in another fail
	// (see WorkspaceCreationLockSpansSchemas), which would blur what each
	// subtest asserts.
	require.Regexp(t, `^postgres://postgres@127\.0\.0\.1:\d+/tfstate\?sslmode=disable$`, pg.ConnStr())

	t.Run("ConcurrentApplyOneSchemaWaitsForTheLock", func(t *testing.T) {
		const schema = "concurrent"
		w := newTFWorld(t)
		a, b := seeded(t, w, pg, schema)

		g := newGate(t)
		pa := w.start(a, []string{"PGAPPNAME=concurrent_a"}, "apply", "-auto-approve", "-input=false",
			"-target=terraform_data.a", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa) // A is inside apply: it holds the lock
		pb := w.start(b, []string{"PGAPPNAME=concurrent_b"}, "apply", "-auto-approve", "-input=false",
			"-target=terraform_data.b", "-lock-timeout=90s")

		// B's first attempt has completed while A held the lock, so it
		// failed: from here on B can only get the lock by waiting for A.
		_, err := pg.WaitLog(w.ctx, lockAttempt("concurrent_b"))
		require.NoError(t, err)
		locks, err := pg.AdvisoryLocks(w.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"concurrent_a"}, holders(locks), "only A holds a lock")
		g.release(t)

		outA, errA := pa.wait()
		require.NoError(t, errA, outA)
		outB, errB := pb.wait()
		require.NoError(t, errB, outB)
		require.GreaterOrEqual(t, countLines(pg.Log(), lockAttempt("concurrent_b")), 2, "B retried the lock")

		// B read the state A wrote (after taking the lock), so nothing
		// was lost: both targeted changes and the seed are there.
		require.ElementsMatch(t, []string{"terraform_data.seed", "terraform_data.a", "terraform_data.b"},
			stateResources(t, pgState(w.ctx, t, pg, schema)))
		list := w.mustRun(a, nil, "state", "list")
		require.ElementsMatch(t, []string{"terraform_data.seed", "terraform_data.a", "terraform_data.b"}, strings.Fields(list))
	})

	t.Run("HeldLockFailsFast", func(t *testing.T) {
		const schema = "held"
		w := newTFWorld(t)
		a, b := seeded(t, w, pg, schema)

		g := newGate(t)
		pa := w.start(a, []string{"PGAPPNAME=held_holder"}, "apply", "-auto-approve", "-input=false",
			"-target=terraform_data.a", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa)

		out, err := w.run(b, []string{"PGAPPNAME=held_waiter"}, "apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
		require.Error(t, err, out)
		require.Contains(t, flat(out), "Error acquiring the state lock")
		require.Contains(t, flat(out), "Workspace is already locked: default")

		// terraform's pg error carries the requester's own lock info, so
		// the holder is named by the server: the session holding the
		// workspace row's advisory lock is A's.
		rows, err := pg.Query(w.ctx, "SELECT id FROM "+schema+".states WHERE name = 'default'")
		require.NoError(t, err)
		locks, err := pg.AdvisoryLocks(w.ctx)
		require.NoError(t, err)
		var holders []string
		for _, l := range locks {
			if rows[0][0] == formatInt(l.Key) {
				holders = append(holders, l.Application)
			}
		}
		require.Equal(t, []string{"held_holder"}, holders)

		g.release(t)
		outA, errA := pa.wait()
		require.NoError(t, errA, outA)
		locks, err = pg.AdvisoryLocks(w.ctx)
		require.NoError(t, err)
		require.Empty(t, locks, "A released its lock")
	})

	t.Run("KilledHolderReleasesItsLock", func(t *testing.T) {
		const schema = "killed"
		w := newTFWorld(t)
		a, b := seeded(t, w, pg, schema)

		g := newGate(t)
		pa := w.start(a, []string{"PGAPPNAME=killed_holder"}, "apply", "-auto-approve", "-input=false",
			"-target=terraform_data.a", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa)
		pa.kill(t)

		// pg locks belong to the holder's session: the server ends it when
		// the killed process's connection closes, so B gets the lock
		// without anyone unlocking.
		out := w.mustRun(b, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=60s")
		require.Contains(t, flat(out), "Apply complete!")
		require.ElementsMatch(t, []string{"terraform_data.seed", "terraform_data.a", "terraform_data.b"},
			stateResources(t, pgState(w.ctx, t, pg, schema)))
	})

	t.Run("WorkspaceCreationLockSpansSchemas", func(t *testing.T) {
		w := newTFWorld(t)
		a, b := w.dir(pg.BackendJSON("create_a")), w.dir(pg.BackendJSON("create_b"))
		w.mustRun(a, nil, "init", "-input=false")
		w.mustRun(b, nil, "init", "-input=false")

		// A's first apply creates its workspace: it holds the creation
		// lock until it has written its first state, after the gate.
		g := newGate(t)
		pa := w.start(a, nil, "apply", "-auto-approve", "-input=false", "-var", "gate="+g.path)
		g.reached(w.ctx, t, pa)
		locks, err := pg.AdvisoryLocks(w.ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{-1}, keys(locks))

		// B works on another schema, yet its lock fails without a timeout...
		out, err := w.run(b, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=0s")
		require.Error(t, err, out)
		require.Contains(t, flat(out), "Already locked for workspace creation: default")

		// ...and succeeds with one, once A is through.
		pb := w.start(b, nil, "apply", "-auto-approve", "-input=false", "-lock-timeout=90s")
		g.release(t)
		outA, errA := pa.wait()
		require.NoError(t, errA, outA)
		outB, errB := pb.wait()
		require.NoError(t, errB, outB)
	})

	t.Run("SharedWithAChildProcess", func(t *testing.T) {
		const schema = "shared_child"
		ctx := newTFWorld(t).ctx
		var stderr bytes.Buffer
		c := childproc.Start(t, "TestPostgresChild", childproc.WithEnv(pg.Env(), childSchemaEnv+"="+schema),
			childproc.WithStderr(&stderr), childproc.WithTimeout(testTimeout))
		err := c.Wait()
		out := c.Output() + stderr.String() // stderr is whole once the child is waited for
		require.NoError(t, err, "%s", out)
		require.Contains(t, out, "--- PASS: TestPostgresChild")

		// The child applied through the shared server, and its cleanup
		// left the server running.
		require.ElementsMatch(t, []string{"terraform_data.seed"}, stateResources(t, pgState(ctx, t, pg, schema)))
	})
}

func TestStartPostgresCleansUp(t *testing.T) {
	var dir, addr string
	t.Run("server", func(t *testing.T) {
		pg := StartPostgres(t)
		dir, addr = pg.dir, fmt.Sprintf("127.0.0.1:%d", pg.Port())
		require.DirExists(t, dir)
		require.LessOrEqual(t, len(dir+"/.s.PGSQL.65535.lock"), 107, "the socket path fits")
		rows, err := pg.Query(context.Background(), "SELECT current_database(), current_user, inet_server_addr()")
		require.NoError(t, err)
		require.Equal(t, [][]string{{"tfstate", "postgres", "127.0.0.1"}}, rows)
		rows, err = pg.Query(context.Background(), "SELECT 1 WHERE false")
		require.NoError(t, err)
		require.Empty(t, rows)
		_, err = pg.Query(context.Background(), "SELECT nonsense")
		require.ErrorContains(t, err, `query "SELECT nonsense"`)
	})
	// The subtest's cleanup stopped the server and removed everything.
	require.NoDirExists(t, dir)
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err == nil {
		_ = c.Close()
	}
	require.Error(t, err, "nothing listens on the server's port any more")
}

// TestPostgresChild is SharedWithAChildProcess's child: it runs only with
// childSchemaEnv set.
func TestPostgresChild(t *testing.T) {
	schema := os.Getenv(childSchemaEnv)
	if schema == "" {
		t.Skip("runs only as TestPostgres/SharedWithAChildProcess's child")
	}
	pg := StartPostgres(t)
	require.True(t, pg.Shared())
	require.Equal(t, os.Getenv(PostgresEnvVar), pg.ConnStr())
	_, err := pg.WaitLog(context.Background(), func(string) bool { return true })
	require.ErrorIs(t, err, ErrNoServerLog)

	w := newTFWorld(t)
	d := w.dir(pg.BackendJSON(schema))
	w.mustRun(d, nil, "init", "-input=false")
	w.mustRun(d, nil, "apply", "-auto-approve", "-input=false", "-target=terraform_data.seed")
}
