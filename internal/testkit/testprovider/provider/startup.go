package provider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// StartAllocEnv names the environment variable that makes the provider
// allocate and touch that many MiB while it starts, before it answers
// terraform's handshake, and release them before it answers: a provider
// that is heavy only while it starts (a large provider building its
// schema), so a kernel OOM kill in a memory cgroup lands in start-up,
// where terraform reports go-plugin's start-up failure, not a plugin
// that died mid-call.
const StartAllocEnv = "TFITEST_START_ALLOC_MIB"

// StartTogetherEnv names the environment variable, "DIR:K", that makes
// StartAllocEnv's start-ups meet in DIR so that K of them hold their
// allocation at once, whatever the machine's timing: each start-up
// records itself in DIR and waits until K have (a start-up recorded
// earlier counts, so a later one, a retry say, never waits for company),
// then allocates, then keeps its allocation until every start-up
// recorded in DIR has released its own or ended. A start-up the kernel
// kills has ended, so the others go on.
const StartTogetherEnv = "TFITEST_START_TOGETHER"

// StartUp does what StartAllocEnv and StartTogetherEnv ask; the
// provider's main calls it before it serves. Without StartAllocEnv it
// does nothing.
func StartUp() error {
	v := os.Getenv(StartAllocEnv)
	if v == "" {
		return nil
	}
	mib, err := strconv.Atoi(v)
	if err != nil || mib < 0 {
		return fmt.Errorf("%s=%q: want a number of MiB", StartAllocEnv, v)
	}
	var dir string
	var k int
	if t := os.Getenv(StartTogetherEnv); t != "" {
		d, n, ok := strings.Cut(t, ":")
		k, err = strconv.Atoi(n)
		if !ok || d == "" || err != nil || k < 1 {
			return fmt.Errorf("%s=%q: want DIR:K", StartTogetherEnv, t)
		}
		dir = d
	}
	self := procName(os.Getpid())
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "start-"+self), nil, 0o644); err != nil {
			return err
		}
		if err := until(func() (bool, error) {
			n, err := filepath.Glob(filepath.Join(dir, "start-*"))
			return len(n) >= k, err
		}); err != nil {
			return err
		}
	}
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1 // an untouched page is not resident
	}
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "done-"+self), nil, 0o644); err != nil {
			return err
		}
		if err := until(func() (bool, error) {
			starts, err := filepath.Glob(filepath.Join(dir, "start-*"))
			for _, s := range starts {
				name := strings.TrimPrefix(filepath.Base(s), "start-")
				if _, err := os.Stat(filepath.Join(dir, "done-"+name)); err != nil && alive(name) {
					return false, nil
				}
			}
			return true, err
		}); err != nil {
			return err
		}
	}
	b[0] = 2 // the allocation is live up to here, and released below
	debug.FreeOSMemory()
	return nil
}

// until polls cond until it holds. The provider has no other way to
// learn that another process ended; the test that sets StartTogetherEnv
// bounds the whole run.
func until(cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procName names a process for StartTogetherEnv: its PID and start time,
// so a PID the kernel reused is never taken for the recorded process.
func procName(pid int) string {
	return strconv.Itoa(pid) + "-" + startTime(pid)
}

// alive: the process procName named still runs (a zombie has ended).
func alive(name string) bool {
	pid, start, ok := strings.Cut(name, "-")
	if !ok {
		return false
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	f := bytes.Fields(b[i+2:]) // f[0] is field 3, the state
	return len(f) > 19 && string(f[0]) != "Z" && string(f[0]) != "X" && string(f[19]) == start
}

// startTime is field 22 of /proc/PID/stat, "" when unreadable.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return ""
	}
	return string(f[19])
}
