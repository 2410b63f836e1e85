package memory

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// exitInfo says whether this kernel tells a pidfd's holder, parent or
// not, how the process ended (PIDFD_GET_INFO with PIDFD_INFO_EXIT,
// Linux 6.15): older kernels keep that for the parent alone, and then no
// pidfd is opened.
var exitInfo = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 6, 15)
})

// kernelAtLeast compares a kernel release ("6.18.44-...") with
// major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	f := strings.FieldsFunc(release, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// openExit opens a pidfd on pid, provided it is still the process that
// started at start (a PID reused since the walk is left alone); -1 when
// none was opened. Holding it is what has the kernel keep the process's
// exit status for exitKilled.
func openExit(pid int, start uint64) int {
	if !exitInfo() {
		return -1
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1
	}
	if StartTime(pid) != start {
		_ = unix.Close(fd)
		return -1
	}
	return fd
}

// exitKilled tells how the process of pidfd fd ended: ended is false
// while it runs (or its parent has not reaped it yet), killed is true
// when SIGKILL ended it.
func exitKilled(fd int) (killed, ended bool) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(fd, &info); err != nil || info.Mask&unix.PIDFD_INFO_EXIT == 0 {
		return false, false
	}
	ws := unix.WaitStatus(uint32(info.Exit_code))
	return ws.Signaled() && ws.Signal() == unix.SIGKILL, true
}

func closeExit(fd int) { _ = unix.Close(fd) }
