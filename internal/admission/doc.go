// Package admission decides when a unit of a Run may start: the memory
// gate (Memory) admits a unit only when its expected memory fits in the
// Run's budget, and the core gate (Cores) lets a unit's terraform
// process start only while a core is free. It learns what each
// component needs from what its runs measured, and tells a unit the
// kernel killed for memory from one that failed. It decides only:
// internal/memory does the reading (the machine's budget, process
// trees, the kernel's OOM-kill count), and the caller runs the units
// and reports the waits (Wait) as it likes. Units are indexes into the
// Run's units; nothing here knows the runner's types.
//
// Guarantees:
//
//   - A unit is admitted only when the running units' use plus its
//     expected peak fits in the budget, a running unit counting as the
//     larger of its expected peak and what it was measured at so far;
//     with nothing running the next unit always starts (one expected to
//     need more than the whole budget runs alone, with a warning), so the
//     gate never holds a Run back for good. A unit waiting to run again
//     after an out-of-memory kill goes before any new unit.
//   - A unit's expected peak is its component's (by source dir and
//     engine) in the Run's command Class: the recorded decaying
//     high-water mark, raised at once by any higher measurement and
//     lowered only by a Run whose units succeeded, a quarter of the way
//     at a time; a class never measured takes the component's heaviest
//     known class, so a light command (output) never lowers what a heavy
//     one taught. A caller's hint (Unit.Expected) raises it, never lowers
//     it. A component never measured counts as UnmeasuredPeak, and under
//     a budget too tight for the parallelism's worth of those, one of its
//     units runs first and the others wait for its measured peak.
//   - The record (MemoryConfig.Record) is written atomically, 0600, and
//     merged with what another process wrote since the Run began; one
//     that is not a private regular file of this user (or root), or of
//     another version, is ignored with a warning, never believed and
//     never an error: it only steers scheduling. A version 1 record
//     (without classes) is read as peaks of an unknown class, kept as
//     they are. A record of a newer release is never overwritten: it is
//     read as none, Save leaves it (also one that appeared during the
//     Run), and Memory.Newer names it (a *format.NewerError) for the
//     caller's one warning.
//   - A unit's failure is taken for an out-of-memory kill
//     (Use.OutOfMemory) only when the kernel's OOM-kill count rose while
//     it ran, its terraform failed, and the victim was of its process
//     trees: a process of them ended by a SIGKILL the caller did not send
//     (Memory.Reaped), its terraform ended by SIGKILL, or terraform saying
//     a plugin died under it; never when its context ended. Such a unit
//     runs again at most once, only if MemoryConfig.Retryable says so,
//     and only when fewer units run than when it was killed (or none).
//   - Busy cores are measured, never assumed: a unit holds a core from
//     Acquire until its process tree is sampled idle (under a share of a
//     core scaled by the machine's load, nothing runnable) or Release,
//     and again whenever a sample finds it busy. A unit never waits for a
//     core while no unit is busy; freed cores go to the units that first
//     asked earliest.
//   - A wait for a core ends with its context. The caller hears of
//     every wait through OnWait: a unit held back for memory as its wait
//     begins and when it is admitted, a unit waiting for a core as its
//     wait begins and when it may go on (with the wait's length), a unit
//     waiting to run again after an out-of-memory kill as it begins.
//     Use.Wait and Cores.Waited add up a unit's waits.
//   - Memory.Run stops the watch of each attempt before it returns: no
//     goroutine of the gate outlives the unit's run.
package admission
