//go:build unix

package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// TestS3Backend runs the seed scenario on a real S3 backend (moto on
// loopback), under both engines, with DynamoDB locking and with S3-native
// locking (use_lockfile): twelve instances of one component, each with
// its own state key, applied at once, each state in the bucket holding
// its resource and no lock left. Then a
// runner process is killed with its whole machine while its engine holds
// one instance's lock: the lock outlives it, the next run without
// patience fails naming the holder, and WithStaleLockRecovery releases
// exactly that lock (the journal proves the crashed run left it) and
// applies.
func TestS3Backend(t *testing.T) {
	moto := testbackend.StartMoto(t)
	require.NoError(t, moto.CreateLockTable(testCtx(t)))
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		e.NeedBackend(t, "s3")
		for _, lock := range []testbackend.S3Lock{testbackend.DynamoDBLock, testbackend.LockFile} {
			t.Run(lock.String(), func(t *testing.T) {
				bucket := strings.ToLower(fmt.Sprintf("state-%s-%s", e.Name, strings.ReplaceAll(lock.String(), "_", "-")))
				require.NoError(t, moto.CreateBucket(testCtx(t), bucket))
				dir := t.TempDir()
				root, cacheDir := filepath.Join(dir, "workdirs"), filepath.Join(dir, "cache")
				src := filepath.Join(dir, "src", "cache")
				writeTree(t, src, map[string]string{"main.tf": gatedComponent})
				key := func(i int) string { return fmt.Sprintf("plat-ue2-dev/cache-%02d/terraform.tfstate", i) }
				spec := func(i int, gate string) workdir.Spec {
					v, err := json.Marshal(map[string]any{"gate": gate})
					require.NoError(t, err)
					return workdirSpec("plat-ue2-dev", fmt.Sprintf("cache-%02d", i), src, map[string][]byte{
						"backend.tf.json": moto.BackendJSON(bucket, key(i), lock), "terraform.tfvars.json": v})
				}
				newRunner := func(opts ...Option) *Runner {
					wd, err := workdir.New(root)
					require.NoError(t, err)
					cache, err := pluginc.Open(cacheDir)
					require.NoError(t, err)
					r, err := New(append([]Option{WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(e.Path), WithParallelism(6)}, opts...)...)
					require.NoError(t, err)
					return r
				}
				var units []Unit
				for i := range 12 {
					units = append(units, Unit{Workdir: spec(i, "")})
				}

				r := newRunner()
				rep, err := r.Run(testCtx(t), Apply, units...)
				require.NoError(t, err)
				require.Len(t, rep.Results, 12)
				for i, res := range rep.Results {
					require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
					st, ok, err := moto.Object(testCtx(t), bucket, key(i))
					require.NoError(t, err)
					require.True(t, ok, "the state of %s is in the bucket", res.Unit)
					require.Contains(t, string(st), `"terraform_data"`)
					_, locked, err := moto.Lock(testCtx(t), bucket, key(i), lock)
					require.NoError(t, err)
					require.False(t, locked, "%s left no lock", res.Unit)
				}

				// A killed machine's lock on cache-00.
				g := newGate(t, filepath.Join(dir, "gate"))
				started := g.started(t)
				c := startChild(t, childConfig{TF: e.Path, Root: root, Cache: cacheDir, Spec: spec(0, g.dir)}, nil)
				select {
				case <-started:
				case <-c.Done():
					t.Fatalf("the child ended before its apply: %v\n%s", c.Wait(), c.Output())
				}
				held, ok, err := moto.Lock(testCtx(t), bucket, key(0), lock)
				require.NoError(t, err)
				require.True(t, ok, "the child's engine holds the lock during its apply")
				pid := c.PID()
				crashMachine(t, c, root)
				still, ok, err := moto.Lock(testCtx(t), bucket, key(0), lock)
				require.NoError(t, err)
				require.True(t, ok, "the lock outlives the killed run")
				require.Equal(t, held.ID, still.ID)

				locked := Unit{Workdir: spec(0, "")}
				rep, err = newRunner(WithLockTimeout(0)).Run(testCtx(t), Apply, locked)
				require.ErrorIs(t, err, ErrStateLocked)
				require.ErrorContains(t, err, held.ID)
				res := rep.Results[0]
				require.NotNil(t, res.StateLock)
				require.Equal(t, held.ID, res.StateLock.ID)
				require.Equal(t, held.Who, res.StateLock.Who, "the s3 backend names the holder")

				rep, err = newRunner(WithLockTimeout(0), WithStaleLockRecovery()).Run(testCtx(t), Apply, locked)
				require.NoError(t, err)
				res = rep.Results[0]
				require.Equal(t, Succeeded, res.Status)
				require.Len(t, res.RecoveredLocks, 1)
				require.Equal(t, held.ID, res.RecoveredLocks[0].ID)
				log, err := os.ReadFile(res.Log)
				require.NoError(t, err)
				require.Contains(t, string(log), fmt.Sprintf("state lock %s was left by this instance's run of pid %d", held.ID, pid))
				_, ok, err = moto.Lock(testCtx(t), bucket, key(0), lock)
				require.NoError(t, err)
				require.False(t, ok, "the recovered lock is released")

			})
		}
	})
}
