package memory

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A process of the tree that SIGKILL ended is among Killed, with the
// memory it held; one that exited is not.
func TestWatchTellsKilledProcesses(t *testing.T) {
	if !exitInfo() {
		t.Skip("this kernel does not tell a pidfd's holder how its process ended (PIDFD_INFO_EXIT: Linux 6.15)")
	}
	w := NewWatch(time.Hour, 0) // only Add's and Sample's walks
	defer w.Stop()
	pid, _ := startAllocator(t, 32)
	w.Add(pid)
	procs := Tree(pid)
	require.Len(t, procs, 2)
	victim := procs[1].PID
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	// The shell reaps it, then exits 0 itself (this test reaps the shell
	// at cleanup: a zombie's start time is still there, so wait for its
	// state instead).
	for StartTime(pid) != 0 && !zombie(pid) {
		runtime.Gosched()
	}
	w.Sample()
	w.Stop()
	killed := w.Killed()
	require.Len(t, killed, 1, "%v", killed)
	require.Equal(t, victim, killed[0].PID)
	require.GreaterOrEqual(t, killed[0].RSS, int64(32<<20))

	w = NewWatch(time.Hour, 0)
	pid, stop := startAllocator(t, 1)
	w.Add(pid)
	stop()
	w.Sample()
	w.Stop()
	require.Empty(t, w.Killed(), "processes that exited were not killed")
}

// zombie: pid has ended and waits for its parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func TestKernelAtLeast(t *testing.T) {
	require.True(t, kernelAtLeast("6.18.44-fc-v657", 6, 15))
	require.True(t, kernelAtLeast("7.0.0", 6, 15))
	require.False(t, kernelAtLeast("6.14.2", 6, 15))
	require.False(t, kernelAtLeast("5.19", 6, 15))
	require.False(t, kernelAtLeast("garbage", 6, 15))
}
