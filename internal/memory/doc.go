// Package memory reads what the runner's memory budget is made of: the
// memory this process may use (its cgroup's limit, or the machine's
// available memory), the resident memory of a process tree, and the
// kernel's count of processes it killed for memory, and which of a
// tree's processes a SIGKILL ended. It reads /proc and the cgroup
// filesystem, and opens pidfds to learn how a process ended; it never
// writes, signals or starts anything. Linux only: elsewhere every reading reports that it found
// nothing (ok false, zero sizes).
//
// Guarantees:
//
//   - Machine finds the memory cgroup of this process from
//     /proc/self/cgroup and where it is mounted from /proc/self/mountinfo,
//     for cgroup v1 (the memory controller's hierarchy: the lowest of
//     memory.limit_in_bytes and memory.stat's hierarchical_memory_limit)
//     and v2 (the lowest memory.max of the cgroup and its ancestors up to
//     the mount). A limit at or above the machine's MemTotal is no limit
//     (the kernel's "unlimited" is a huge number). Default budget: a
//     CgroupShare of the limit less this process's resident memory when
//     there is a limit, else an AvailableShare of MemAvailable.
//   - Tree(pid) walks the process tree under pid: each process's threads
//     from /proc/PID/task, each thread's children from its own
//     /proc/TID/task/TID/children (so the entries the walk leaves in the
//     kernel's cache go with the thread, not with the reaping of the
//     process), so a sample costs reads of the tree's own processes and
//     threads, never a scan of the host's processes. A
//     process that ends during the walk is left out, never an error.
//     Resident memory is each process's resident set, summed: pages two
//     processes share count twice, so the figure errs on the high side.
//     One read of /proc/PID/stat per process gives its resident set, its
//     CPU time, its start time and its state.
//   - A Watch samples the trees of the roots it is given at a fixed
//     interval and keeps their current sum and its peak, and the cores
//     they used over the last 50 ms or more of samples (the CPU time of the
//     processes seen in both, and all of a process's new since, over
//     the wall time between): a process that ends is not a drop, so a
//     tree waiting on the network measures near zero and one busy
//     loading providers near a core per busy process. Only a span that
//     each running root ran through is measured: no figure until a root
//     has been watched for 50 ms or more since its Add (a process that
//     just started has no clock tick yet, busy or not), none while no
//     root runs, so an idle figure is always one of a running process.
//     Each sample also says whether a process it read was runnable
//     (state R, of its main thread: running or waiting for a core): a
//     process starved of CPU on a loaded machine is charged next to no
//     CPU time, like one that waits, but only it is runnable. A root is
//     named by its PID and start time: once that process ends, a later
//     process that reuses the PID is never counted. Stop joins its
//     goroutine.
//     With Quick on, the processes the last walk found are also read
//     every cpuEvery in between (one file each), the cores measured over
//     the last 50 ms or more; such a sample is marked as not whole, since
//     a process started since the walk is in none of its reads, and
//     WalkSoon asks for a walk at once. NewWatchWalking walks only every
//     walkEvery-th sample (Add's and WalkSoon's always walk); the others
//     read the processes the last walk found, one file each.
//   - A Watch holds a pidfd on each process a walk found (one
//     pidfd_open per new process, closed once the process is settled), so
//     that, where the kernel tells a process that is not the parent how
//     another ended (Linux 6.15 and later, PIDFD_INFO_EXIT), Killed lists
//     the processes of the trees SIGKILL ended: the OOM killer's victims
//     among them, whoever reaped them (a provider is terraform's child,
//     not this process's). A process that started and ended between two
//     walks is never known; on older kernels no pidfd is opened and
//     Killed stays empty. This is the only file descriptor a Watch holds
//     per process.
//   - OOMCounter reads the count of the kernel's OOM kills in this
//     process's memory cgroup (v1: memory.oom_control's oom_kill; v2:
//     memory.events' oom_kill, which counts the cgroup's descendants too),
//     else the machine's (/proc/vmstat oom_kill). It only ever grows: a
//     rise between two readings means the kernel killed a process for
//     memory in between. The cgroup is found once per counter.
package memory
