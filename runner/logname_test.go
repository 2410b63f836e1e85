package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestLogName: log file names are readable, bounded, safe and distinct,
// whatever the unit ID.
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
		n := logName(id)
		require.LessOrEqual(t, len(n), 100, "%q", id)
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
	require.Contains(t, logName("plat-ue2-dev/elasticache/redis-cluster-1"), "plat-ue2-dev_elasticache_redis-cluster-1-")
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
