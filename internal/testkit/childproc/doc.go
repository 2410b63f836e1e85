// Package childproc is the one harness for tests that need a second OS
// process (flocks held across processes, a process killed mid-write, a
// crash): the test binary re-executes itself as a child with a role, and
// the test talks to it through its stdin and its stdout lines.
//
// Guarantees:
//
//   - A child is this same test binary, started by Start with the role in
//     the environment variable Env; Main, called from TestMain, runs the
//     package's child function for that role instead of the tests. Main
//     removes Env from the child's own environment first, so nothing the
//     child starts (terraform, a provider, another test binary) takes
//     itself for a child.
//   - A child's exit says how its role went: 0 when the child function
//     returned nil, 1 with "child: ERROR" on stderr otherwise.
//   - Nothing outlives the test: every child is killed (SIGKILL) and
//     waited for when the test that started it ends, and a child still
//     running when its timeout (WithTimeout, 3 minutes by default) passes
//     is killed, so a broken test never hangs.
//   - Reading its output never blocks it: stdout is read line by line
//     into a buffer as the child writes, kept whole for Output, whether
//     or not the test reads it; the child is reaped as soon as it exits,
//     and Done is closed then, so a test can select on a child's end.
//   - Each stdout line is taken once, by Next, Expect, WaitLine or
//     ReadLine; ReadLine needs no test, for goroutines other than the
//     test's, as does Spawn, which returns a failure to start instead of
//     failing the test.
//   - AppendLine, for children that log to one shared file, writes each
//     line in one O_APPEND write, so no line is lost or torn.
//
// The package is for tests only: it imports testing.
package childproc
