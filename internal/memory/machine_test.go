package memory

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadThisMachine(t *testing.T) {
	m, err := Read()
	require.NoError(t, err)
	require.Positive(t, m.Total)
	require.Positive(t, m.Available)
	require.LessOrEqual(t, m.Available, m.Total)
	require.Positive(t, m.Budget())
	require.Positive(t, m.Self, "this process's own resident memory")
	if m.Limit > 0 {
		require.Less(t, m.Limit, m.Total, "a limit at or above MemTotal is no limit")
		require.Equal(t, m.Limit/100*CgroupShare-m.Self, m.Budget())
	} else {
		require.Equal(t, m.Available/100*AvailableShare, m.Budget())
	}
	if m.Cgroup != "" {
		require.DirExists(t, m.Cgroup)
		name := "memory.limit_in_bytes"
		if m.V2 {
			name = "cgroup.procs"
		}
		require.FileExists(t, filepath.Join(m.Cgroup, name))
		self, err := os.ReadFile(filepath.Join(m.Cgroup, "cgroup.procs"))
		require.NoError(t, err)
		require.Contains(t, "\n"+string(self), "\n"+strconv.Itoa(os.Getpid())+"\n", "the cgroup found is this process's own")
	}
	t.Logf("budget %d MiB from %s", m.Budget()>>20, m.From())
}

func TestFindCgroup(t *testing.T) {
	v1Mounts := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v2Mounts := `25 20 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
`
	for _, tc := range []struct {
		name, cgroup, mounts, dir string
		v2                        bool
	}{
		{"v1 memory hierarchy wins over the unified one", "4:memory:/a/b\n1:cpu:/\n0::/x\n", v1Mounts, "/sys/fs/cgroup/memory/a/b", false},
		{"v1 with joined controllers", "4:cpu,memory:/c\n", "35 31 0:32 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup rw,cpu,memory\n", "/sys/fs/cgroup/cpu,memory/c", false},
		{"v2 only", "0::/user.slice/u.scope\n", v2Mounts, "/sys/fs/cgroup/user.slice/u.scope", true},
		{"v2 mount rooted at the cgroup (a namespace)", "0::/ns/job\n", "25 20 0:22 /ns /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/job", true},
		{"escaped mount point", "0::/j\n", `25 20 0:22 / /mnt/my\040cg rw - cgroup2 cgroup2 rw` + "\n", "/mnt/my cg/j", true},
		{"no memory controller", "1:cpu:/\n", v1Mounts, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, v2 := findCgroup(tc.cgroup, tc.mounts)
			require.Equal(t, tc.dir, dir)
			require.Equal(t, tc.v2, v2)
		})
	}
}

// The v2 limit is the lowest memory.max on the way up to the mount.
func TestCgroupLimitV2TakesTheLowestAncestor(t *testing.T) {
	root := t.TempDir()
	mid := filepath.Join(root, "mid")
	leaf := filepath.Join(mid, "leaf")
	require.NoError(t, os.MkdirAll(leaf, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mid, "memory.max"), []byte("1073741824\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(leaf, "memory.max"), []byte("max\n"), 0o644))
	require.Equal(t, int64(1<<30), cgroupLimit(leaf, true))
	require.NoError(t, os.WriteFile(filepath.Join(leaf, "memory.max"), []byte("536870912\n"), 0o644))
	require.Equal(t, int64(512<<20), cgroupLimit(leaf, true))
}

// The v1 limit is the lower of the cgroup's own and the hierarchy's.
func TestCgroupLimitV1TakesTheHierarchicalLimit(t *testing.T) {
	d := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(d, "memory.limit_in_bytes"), []byte("9223372036854771712\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(d, "memory.stat"), []byte("cache 0\nhierarchical_memory_limit 2147483648\n"), 0o644))
	require.Equal(t, int64(2<<30), cgroupLimit(d, false))
}

func TestOOMCounterReadsACounter(t *testing.T) {
	if _, err := os.Stat("/proc/vmstat"); err != nil {
		t.Skip("no /proc/vmstat on this platform")
	}
	n, ok := OOMCounter()()
	require.True(t, ok, "this kernel counts OOM kills (memory.oom_control, memory.events or /proc/vmstat)")
	require.GreaterOrEqual(t, n, int64(0))
}

func TestBudgetLeavesTheHostItsShare(t *testing.T) {
	m := Machine{Limit: 1000 << 20, Self: 100 << 20, Available: 8 << 30}
	require.Equal(t, int64(1000<<20)/100*CgroupShare-100<<20, m.Budget(), "a cgroup's share, less the host")
	m.Limit = 0
	require.Equal(t, int64(8<<30)/100*AvailableShare, m.Budget(), "MemAvailable already leaves out what is in use")
	m = Machine{Limit: 100 << 20, Self: 200 << 20}
	require.Zero(t, m.Budget(), "never negative")
}
