// Package reap finds, waits for and kills the processes a run of an
// instance left running: the engine (terraform or tofu, or a shim) a
// crashed run started, what that engine started (providers,
// provisioners and their jobs), and what a unit's own terraform left
// once it ended. It reads /proc and signals through pidfds. Linux only:
// elsewhere Supported is false and nothing is ever found, waited for or
// killed (StartTime is 0).
//
// Guarantees:
//
//   - Only what the SDK made is touched: a Group's processes are the
//     members of the recorded engine's process group that carry the
//     instance's exact TF_DATA_DIR, and its leader when its start time
//     matches the record (a process that reused the PID never matches);
//     Scan finds the host's processes with that exact TF_DATA_DIR.
//     Callers hold the instance lock, so every such process is a
//     leftover of that instance.
//   - A process is held through a pidfd opened before it is checked, so
//     a wait or a signal reaches that process and never one that reused
//     its PID; no pidfd (Linux before 5.3), nothing is touched.
//   - Settle never kills an engine: it may be writing the state. It waits
//     for the group's engines (the leader, and members running an engine
//     executable that are not plugins), bounded by its wait and ctx,
//     without polling (a pidfd is readable once its process ends), and
//     returns an engine still running, having killed nothing; only once
//     no engine is left does it kill the rest of the group.
//   - Kill SIGKILLs through the pidfd and waits, at most 10 seconds, for
//     each killed process to end, so nothing of the instance runs once
//     its lock is released.
//   - Cost follows the work: an empty group costs one kill(2); a scan of
//     /proc's stat files happens only for a group with members; reading
//     every process's environment (Scan) is for callers to do only where
//     leftovers can be (a killed or interrupted terraform, a Stop's
//     kill).
//   - Nothing secret is read out: a process is named by its PID and
//     executable's base name, never its command line.
package reap
