package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestLogName: log file names are readable, bounded (163 bytes with the
// longest command name), safe and distinct,
// whatever the unit ID, and distinct per command.
func TestLogName(t *testing.T) {
	long := strings.Repeat("plat-ue2-dev/elasticache/", 20) + "redis"
	ids := []string{
		"plat-ue2-dev/elasticache/redis-cluster-1",
		"plat-ue2-dev/elasticache/redis-cluster-1 ", // differs only by a trailing space
		"plat-ue2-dev_elasticache_redis-cluster-1",  // what the first one's readable part is
		long, long + "x",
		"stack/東京/数据库", "stack/東京/数据庫",
		"../../etc/passwd", ".hidden", "a\x00b", "",
	}
	seen := map[string]string{}
	dir := t.TempDir()
	for _, id := range ids {
		n := logName(id, "apply")
		require.LessOrEqual(t, len(unitFileName(id)), 93, "%q", id)
		require.NotEqual(t, n, logName(id, "plan"))
		require.LessOrEqual(t, len(logName(id, strings.Repeat("x", 64))), 163)
		require.True(t, utf8.ValidString(n))
		require.NotContains(t, n, "/")
		require.False(t, strings.HasPrefix(n, "."), "%q -> %q", id, n)
		require.True(t, strings.HasSuffix(n, ".log"))
		if other, dup := seen[n]; dup {
			t.Fatalf("%q and %q share the log name %q", other, id, n)
		}
		seen[n] = id
		// Every name can be created.
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	require.Contains(t, logName("plat-ue2-dev/elasticache/redis-cluster-1", "plan"), "plat-ue2-dev_elasticache_redis-cluster-1-")
	require.True(t, strings.HasSuffix(logName("a/b", "plan"), ".plan.log"))
}

// TestLogDirWithLongIDs: WithLogDir works for unit IDs longer than a file
// name may be and for non-ASCII ones.
func TestLogDirWithLongIDs(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "o" { value = 1 }`)
	logs := t.TempDir()
	units := []Unit{
		{ID: strings.Repeat("very-long-stack-name/", 15) + "unit", Workdir: workdirSpec("s", "long", src, nil)},
		{ID: "stack/東京/数据库", Workdir: workdirSpec("s", "tokyo", src, nil)},
	}
	rep, err := w.runner(t, WithLogDir(logs)).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	for _, res := range rep.Results {
		require.Equal(t, logs, filepath.Dir(res.Log))
		require.FileExists(t, res.Log)
	}
	require.NotEqual(t, rep.Results[0].Log, rep.Results[1].Log)
}

// TestLogDirKeepsEachCommandsLog: a Plan and then an Apply under one log
// dir keep both logs, each named with its command (issue 18 item 1).
func TestLogDirKeepsEachCommandsLog(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `output "o" { value = 1 }`)
	logs := t.TempDir()
	u := Unit{ID: "s/one", Workdir: workdirSpec("s", "one", src, nil)}
	r := w.runner(t)
	plan, err := r.RunWith(testCtx(t), Plan, []Unit{u}, WithLogDir(logs))
	require.NoError(t, err)
	apply, err := r.RunWith(testCtx(t), Apply, []Unit{u}, WithLogDir(logs))
	require.NoError(t, err)
	planLog, applyLog := plan.Results[0].Log, apply.Results[0].Log
	require.NotEqual(t, planLog, applyLog)
	require.True(t, strings.HasSuffix(planLog, ".plan.log"), planLog)
	require.True(t, strings.HasSuffix(applyLog, ".apply.log"), applyLog)
	p, err := os.ReadFile(planLog)
	require.NoError(t, err)
	require.Contains(t, string(p), "Plan:")
	a, err := os.ReadFile(applyLog)
	require.NoError(t, err)
	require.Contains(t, string(a), "Apply complete")
}
