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
//   - TestHostilePaths: workdir root, provider cache and component source
//     under directory names with quotes, backslashes, control characters,
//     non-ASCII and shell or HCL template syntax still apply.
//
// All skip under -short. Fuzz targets for names, paths, provider
// addresses, constraints and lock files live beside the code they fuzz
// (id_test.go, fuzz_test.go and fuzz_extra_test.go in workdir, pluginc and
// runner).
package stress
