// Package runner runs terraform over many root-module instances at once,
// each in its own isolated workdir, in dependency order.
//
// A Unit is one instance: a workdir.Spec (stack, instance, component
// source, generated files), an optional terraform workspace and the IDs of
// the units it depends on. Run validates the units (unique IDs, known
// dependencies, no cycle: the error names the cycle path), then runs a
// queue: a unit starts as soon as everything it depends on has succeeded
// (Destroy reverses the edges), at most WithParallelism units at once.
//
// Guarantees:
//
//   - Nothing runs when the input is invalid; the error wraps a sentinel
//     from errors.go and names the offending unit, dependency or pattern.
//   - A failed unit's dependents are Skipped with an error naming it;
//     independent branches go on. WithFailFast stops everything at the first
//     failure (running units are interrupted and reported Canceled),
//     WithIgnoreErrors runs dependents anyway, WithIgnoreDependencyOrder
//     makes every unit eligible at once.
//   - Filters (path.Match globs over unit IDs, "!" negates) and shards
//     (WithShard: connected groups of dependent units never split, shards
//     balanced by unit count, the union of all shards is every unit once)
//     only select units; they never reorder them. Plan shows the order
//     without running anything.
//   - Events are delivered one at a time, in order: every selected unit
//     sends PhaseQueued first and PhaseDone (with its final status) last.
//   - Run returns only after every goroutine and process it started has
//     ended.
//
// Execution (New with WithWorkdirs, optionally WithPluginCache): each unit
// prepares its own workdir (workdir.Manager.Prepare takes the instance's
// exclusive lock, across processes, so one instance never runs twice at
// once), then sets up its providers. Units with the same provider
// requirements (root module and local modules, read with
// terraform-config-inspect, plus versions already in the instance's lock
// file) share one leader per Run: it calls pluginc.Cache.Ensure (each
// package downloaded at most once, across processes) and computes the
// .terraform.lock.hcl and CLI config; followers wait for its result and
// never write to the cache. A leader's failure is every follower's error
// (ErrInit, naming the leader). Every unit then runs its own terraform
// (its own *tfexec.Terraform, TF_DATA_DIR from the workdir, the cache as a
// read-only filesystem mirror): init, workspace select-or-create, and the
// command.
//
//   - State locks are waited out: a lock error ("Error acquiring the state
//     lock") is retried with a growing -lock-timeout until WithLockTimeout
//     is spent, then fails with ErrStateLocked. Result.LockWait and
//     LockHolder report the wait and terraform's ID/Who of the holder.
//   - Cancelling ctx sends terraform SIGINT (it stops, writes state and
//     releases its lock) and kills it only after WithInterruptGrace; the
//     unit is reported Canceled. On Linux, any process still carrying the
//     unit's TF_DATA_DIR once terraform is gone (an orphaned plugin, a
//     provisioner's background job) is killed before the instance lock is
//     released, and named in the unit's log.
//   - Output goes to a log file per unit (Result.Log) and, with WithOutput,
//     to one combined stream of whole lines prefixed "[unitID] ".
//   - terraform's environment is the process environment plus the
//     workdir's; variables tfexec manages itself (TF_WORKSPACE, TF_LOG*,
//     TF_CLI_ARGS*, TF_INPUT, TF_VAR_*) are dropped (pass variables in
//     generated tfvars files), and so is TF_PLUGIN_CACHE_DIR, whose writes
//     are unsafe under concurrency.
//   - Remote modules (registry, git, HTTPS archives: any module source not
//     starting with ./ or ../, called from the root module or a local
//     module) are fetched once per Run for all units whose module calls
//     (key path, source, version constraint, local layout) are the same:
//     that leader runs terraform get in its own workdir, and every unit
//     gets a private copy of the resulting modules directory in its own
//     data dir (its modules.json rebased there; skipped when the unit
//     already has the same manifest), so its terraform init keeps them
//     and downloads nothing. A failed fetch is every such unit's error
//     (ErrModules, naming the leader). The modules the manifest records
//     are read for provider requirements too, so providers that only
//     remote modules require come from the shared cache and are in the
//     lock file. Across processes, each Run fetches on its own.
package runner
