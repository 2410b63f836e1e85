package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupShare is the percentage of a cgroup's memory limit the default
// budget gives the units: the rest is for the host process itself, the
// page cache the kernel charges to the cgroup (terraform reads providers
// and writes state through it) and what else runs in the cgroup.
const CgroupShare = 90

// AvailableShare is the percentage of MemAvailable the default budget
// gives the units when no cgroup limits this process: other programs on
// the machine keep allocating while a Run goes on.
const AvailableShare = 75

// Machine is what this process may use, as read from the machine.
type Machine struct {
	// Limit is the memory limit of this process's cgroup in bytes; 0 when
	// none (or none below MemTotal).
	Limit int64
	// Cgroup is the cgroup's directory (whatever its version), "" when
	// none was found.
	Cgroup string
	// V2 is set when Cgroup is a cgroup v2 (unified) directory.
	V2 bool
	// Available is MemAvailable from /proc/meminfo, in bytes.
	Available int64
	// Total is MemTotal, in bytes.
	Total int64
	// Self is this process's resident memory when it was read, in bytes.
	Self int64
}

// Budget is the default budget: CgroupShare of Limit, less Self (the
// host process lives in the cgroup too), when there is a limit, else
// AvailableShare of Available (which already leaves out what is in
// use); 0 when neither could be read.
func (m Machine) Budget() int64 {
	if m.Limit > 0 {
		return max(m.Limit/100*CgroupShare-m.Self, 0)
	}
	return m.Available / 100 * AvailableShare
}

// From says where Budget comes from, for a log line.
func (m Machine) From() string {
	switch {
	case m.Limit > 0 && m.V2:
		return fmt.Sprintf("%d%% of the memory.max of cgroup %s, less this process's resident memory", CgroupShare, m.Cgroup)
	case m.Limit > 0:
		return fmt.Sprintf("%d%% of the memory.limit_in_bytes of cgroup %s, less this process's resident memory", CgroupShare, m.Cgroup)
	}
	return fmt.Sprintf("%d%% of MemAvailable", AvailableShare)
}

// Read reads the machine. An error means /proc/meminfo could not be
// read; a missing or unreadable cgroup is no error (Limit stays 0).
func Read() (Machine, error) {
	var m Machine
	mi, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return m, fmt.Errorf("read memory: %w", err)
	}
	m.Total, m.Available = meminfo(mi, "MemTotal:"), meminfo(mi, "MemAvailable:")
	self, _ := readStat(os.Getpid())
	m.Self = self.rss
	if m.Total == 0 {
		return m, errors.New("read memory: no MemTotal in /proc/meminfo")
	}
	dir, v2 := cgroupDir()
	if dir == "" {
		return m, nil
	}
	m.Cgroup, m.V2 = dir, v2
	limit := cgroupLimit(dir, v2)
	if limit > 0 && limit < m.Total {
		m.Limit = limit
	}
	return m, nil
}

// meminfo returns the value of key (in kB in the file) in bytes.
func meminfo(b []byte, key string) int64 {
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// cgroupDir returns the directory of this process's memory cgroup:
// the v1 memory hierarchy's when it is mounted, else the unified one's.
func cgroupDir() (dir string, v2 bool) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	return findCgroup(string(cg), string(mi))
}

// findCgroup is cgroupDir on the texts of /proc/self/cgroup and
// /proc/self/mountinfo.
func findCgroup(cgroup, mountinfo string) (dir string, v2 bool) {
	var v1Path, v2Path string
	for line := range strings.Lines(cgroup) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2Path = f[2]
		case containsWord(f[1], "memory"):
			v1Path = f[2]
		}
	}
	for line := range strings.Lines(mountinfo) {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		root, mnt := unescape(pf[3]), unescape(pf[4])
		switch {
		case qf[0] == "cgroup" && v1Path != "" && containsWord(qf[2], "memory"):
			return under(mnt, root, v1Path), false
		case qf[0] == "cgroup2" && v2Path != "" && v1Path == "":
			dir, v2 = under(mnt, root, v2Path), true
		}
	}
	return dir, v2
}

// under is where cgroup path p is, for a hierarchy whose root is mounted
// at mnt. Inside a cgroup namespace, p may already be relative to root.
func under(mnt, root, p string) string {
	if root != "/" {
		if rel, ok := strings.CutPrefix(p, root); ok && (rel == "" || rel[0] == '/') {
			p = rel
		}
	}
	return filepath.Join(mnt, p)
}

func containsWord(list, w string) bool {
	for s := range strings.SplitSeq(list, ",") {
		if s == w {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupLimit is the memory limit in force for cgroup dir: v1, the lower
// of its own limit and the hierarchy's; v2, the lowest memory.max from
// dir up to the mount's root (the dir with no memory.max). 0: no limit.
func cgroupLimit(dir string, v2 bool) int64 {
	if !v2 {
		limit := readInt(filepath.Join(dir, "memory.limit_in_bytes"))
		if st, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
			if h := statValue(st, "hierarchical_memory_limit"); h > 0 && (limit <= 0 || h < limit) {
				limit = h
			}
		}
		return max(limit, 0)
	}
	var limit int64
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "memory.max"))
		if err != nil {
			break // the root of the hierarchy has none
		}
		if s := strings.TrimSpace(string(b)); s != "max" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
		}
		if d == "/" || d == "." {
			break
		}
	}
	return limit
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// statValue reads "KEY N" lines (memory.stat, memory.events,
// memory.oom_control, /proc/vmstat); -1 when key is missing.
func statValue(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// OOMCounter returns a function that reads how many processes the
// kernel's OOM killer has killed in this process's memory cgroup (v1:
// memory.oom_control; v2: memory.events, the cgroup's descendants
// included), or on the machine (/proc/vmstat) when the cgroup gives no
// count; ok is false when neither can be read. The cgroup is found once,
// when OOMCounter is called: finding it reads /proc/self/cgroup and the
// mount table, which cost more than the count itself, and a Run reads
// the count before and after each unit while its process stays where it
// is.
func OOMCounter() func() (n int64, ok bool) {
	dir, v2 := cgroupDir()
	return func() (int64, bool) {
		if dir != "" {
			if n, ok := cgroupOOMKills(dir, v2); ok {
				return n, true
			}
		}
		return machineOOMKills()
	}
}

// machineOOMKills is the machine's count of OOM kills (/proc/vmstat).
func machineOOMKills() (n int64, ok bool) {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return 0, false
	}
	if n := statValue(b, "oom_kill"); n >= 0 {
		return n, true
	}
	return 0, false
}

// CgroupOOMKills is OOMKills of the cgroup at dir (a directory of the v1
// memory hierarchy, or of the unified one when v2).
func CgroupOOMKills(dir string, v2 bool) (int64, bool) { return cgroupOOMKills(dir, v2) }

func cgroupOOMKills(dir string, v2 bool) (int64, bool) {
	name := "memory.oom_control"
	if v2 {
		name = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, false
	}
	if n := statValue(b, "oom_kill"); n >= 0 {
		return n, true
	}
	return 0, false
}

// CgroupDir returns the directory of this process's memory cgroup, and
// whether it is a v2 one; "" when none is found.
func CgroupDir() (dir string, v2 bool) { return cgroupDir() }
