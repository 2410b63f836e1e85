// Package stress holds the SDK's stress and fault tests; it has no code of
// its own. The tests run real OS processes (the test binary re-executed as
// runner processes), real terraform, the real test provider and the
// loopback registry, and check the SDK's cross-process guarantees under
// load, SIGKILL and SIGTERM:
//
//   - TestStressProcesses: four processes apply the same 25 instances from
//     one workdir root and one empty provider cache, three rounds over:
//     no unit fails, the provider package is downloaded exactly once, every
//     state holds its resources, and the cache holds one complete package.
//   - TestKillRunnersConverge: runner processes are SIGKILLed mid-download
//     and mid-apply (victims and moments from a logged seed), then run
//     again: everything converges, no torn provider, no lost state, no
//     stale lock that blocks.
//   - TestInterruptedRunnersReleaseLocks: runner processes get SIGTERM while
//     their terraform holds a state lock: units end Canceled (never
//     Failed), every state lock is released, nothing is left running, and
//     the next run converges.
//   - TestSoak: the fault-injection soak (issue 27). Three host processes
//     (soak hosts: the test binary using runner, workdir and pluginc)
//     apply overlapping subsets of twelve instances over and over, under
//     terraform and OpenTofu at once, from one provider cache that starts
//     empty and is fed by a throttled loopback registry, while hosts,
//     engines and provider plugins get SIGKILL, SIGTERM and SIGINT at
//     moments drawn from a logged seed, most right after an engine starts
//     writing a state. After every fault and at the end: no lineage
//     change, no serial going down, no object created twice or lost, an
//     empty or cut-off state only after an engine SIGKILL and then
//     refused by every run, every cache entry hashing to the published
//     package, unit failures only where a fault hit; at the end a clean
//     Run with a short lock timeout applies everything, and no lock, no
//     process and no temp file is left. One minute of faults here;
//     TFISOLATE_SOAK_SEED replays a seed and TFISOLATE_SOAK_DURATION runs
//     the long form (bench/SOAK.md).
//   - TestHostKilledDetectingLeavesNoTemp: a host killed while its engine
//     reports its version (through a shim that holds it) leaves that
//     working dir in TMPDIR; the next Run, in another host, removes it.
//   - TestHostilePaths: workdir root, provider cache and component source
//     under directory names with quotes, backslashes, control characters,
//     non-ASCII and shell or HCL template syntax still apply.
//
// The deterministic crash tests the soak stands beside live with the
// runner (both engines each): TestHostDeathInterruptsEngine (a host
// SIGKILLed mid-apply, its engine parked in a provisioner, leaves it
// interrupted, not killed, and a state that records what it did),
// TestNextRunWaitsForCrashedEngine (the same through a shim engine; the
// next Run waits), TestThreadChurnNeverSignals (applies in a host that
// churns OS threads are never signalled) and TestEnginesDamagedStateRefused
// (a 0-byte and a cut-off state with a backup are refused by Plan, Apply
// and Destroy; a new instance is not).
//
// All skip under -short. Fuzz targets for names, paths, provider
// addresses, constraints and lock files live beside the code they fuzz
// (id_test.go, fuzz_test.go and fuzz_extra_test.go in workdir, pluginc and
// runner).
package stress
