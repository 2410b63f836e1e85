package reap

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// StartTime returns the start time of process pid, in clock ticks since
// boot (field 22 of /proc/PID/stat): with the PID, it names one process,
// never one that reused the PID later. 0 if pid is gone.
func StartTime(pid int) uint64 {
	f := statFields(pid)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return n
}

// statFields returns the fields of /proc/PID/stat that follow the
// command name (the state is the first): the name is in parentheses and
// may itself hold spaces or parentheses.
func statFields(pid int) [][]byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return nil
	}
	return bytes.Fields(b[i+2:])
}
