// Package runner is the engine a host tool drives to run terraform (or
// OpenTofu) over many root-module instances at once, each in its own
// isolated workdir, in dependency order.
//
// A Unit is one instance: a workdir.Spec (stack, instance, component
// source, generated files), an optional workspace, the IDs of the units it
// depends on, its own environment (Env) and terraform arguments (Args),
// and optionally Generate, which turns its dependencies' results (outputs
// included) into generated files right before it starts. A Command is a
// value: Init, Plan, Apply, Destroy, SavePlan and ApplyPlan (the plan and
// apply split of CI tools), SaveDestroyPlan and ApplyDestroyPlan,
// Validate, Output, or a custom Step whose function gets a Handle on each
// unit's prepared workdir and initialized terraform.
//
// Run validates everything first (unit IDs, which may hold no control
// character, dependencies, cycles, filters, every unit's workdir spec,
// arguments and Env, two units of one instance);
// nothing runs on invalid input and the error wraps a sentinel from
// errors.go naming the culprit. Order is the dry run of the queue;
// DryRun is the dry run of Run: for each selected unit, in order, whether
// it would be skipped as unchanged, whether init would run and why, and
// which dependency outputs it waits for, with no terraform started.
//
// # The Runner and a Run
//
// The split is net/http's Client and Request. A Runner (New, Options)
// holds what lives as long as the process: the workdirs, the plugin
// cache, the module store, the engine, the logger, retry and lock
// patience. What a host chooses for one Run is a RunOption given to
// RunWith: filters (WithFilter, WithExclude), an exact set of units
// (WithIDs) and their dependents (WithDependents), the shard, a Stop,
// WithSkipUnchanged, the log dir, the events callback, the failure policy
// (WithFailFast, WithIgnoreErrors, WithIgnoreDependencyOrder) and the
// parallelism. Every RunOption is also an Option: given to New it is the
// default of every Run, and Run(ctx, cmd, units...) is RunWith with the
// defaults alone. A choice given to RunWith wins over New's; its filter
// patterns replace New's instead of adding to them. A Stop given to
// RunWith ends only that Run, one given to New every Run of the Runner,
// later ones too. Runs share nothing a host chose: two Runs at once with
// different choices never see each other's.
//
// # The queue
//
// A unit starts as soon as every unit it depends on has succeeded (destroy
// commands reverse the edges), at most WithParallelism at once; there are
// no barriers between waves. A failed unit's dependents are Skipped with
// ErrDependencyFailed naming it; independent branches go on. WithFailFast
// stops everything at the first failure, WithIgnoreErrors runs dependents
// anyway, WithIgnoreDependencyOrder makes every unit eligible at once.
// Filters are doublestar globs over unit IDs ("*" within a path segment,
// "**" across them, "!" excludes); a pattern that matches no unit is an
// error (ErrNoMatch), so a mistyped exclude never means "everything".
// Shards (WithShard) never split a connected group of dependent units and
// their union is every unit once. The queue lives in internal/queue and
// has no execution code.
//
// # The unit pipeline
//
// Each unit goes through generate -> prepare -> modules -> providers ->
// init -> workspace -> command, and the pipeline returns its Result:
//
//   - prepare: workdir.Manager.Prepare takes the instance's exclusive lock
//     across processes (one instance never runs twice at once) and
//     refreshes the workdir from the source. A wait for another holder is
//     in Result.LockWait and Result.InstanceLock.
//   - modules: remote modules are fetched once per Run for all units
//     whose module calls are the same (one leader runs terraform get; the
//     others get a private copy in their data dir); a failed fetch is every
//     such unit's error (ErrModules, naming the leader). With
//     WithModuleServer the fetch goes through the fleet's module server
//     (registry and git::https modules, downloaded upstream once per
//     fleet); a server that fails is fallen back from and named, once per
//     Run in Report.Warnings and per unit in a module-fallback event.
//   - providers: with WithPluginCache, units with the same provider
//     requirements share one leader per Run that ensures the packages in
//     the shared cache (each downloaded at most once, across processes) and
//     computes the lock file; terraform reads the cache as a filesystem
//     mirror and never writes it. A leader's failure is every follower's
//     error (ErrInit). Short provider addresses resolve on the engine's own
//     default registry.
//   - init: skipped when nothing it depends on changed since the
//     instance's last successful init (the binary, the lock file, the
//     backend, the module calls and installed modules, the workdir's
//     content, the init arguments, the data dir still holding providers
//     and backend state); Result.InitSkipped says so. If terraform asks
//     for init after all, init runs and the command is retried once. A
//     backend configuration that changed since the last init is refused
//     (BackendChangedError) unless Args.MigrateState migrates the state,
//     Args.Reconfigure takes the new backend, or the old local state
//     provably holds no resources. Args.Reconfigure does not force init
//     by itself: init -reconfigure runs only when something init depends
//     on changed. An init that runs again says, in the unit's log and in
//     DryRun's InitReason, which of its inputs changed.
//   - workspace: selected (created if missing) unless already selected,
//     then read back from the data dir: a select that left another
//     workspace selected fails the unit (ErrWorkspace). The name, like
//     ForceUnlock's lock ID, follows "--", so a name starting with "-"
//     is a name, never a flag.
//   - command: one terraform process. Apply's outputs are read from its
//     machine-readable output (plus terraform output when some are
//     sensitive); SavePlan keeps the plan, its JSON rendering and a
//     record of what it was made from in the instance's data dir, and
//     ApplyPlan refuses a plan whose workdir, lock file or terraform
//     changed (ErrStalePlan) and never re-plans. The environment in that
//     record is what the plan was made from (TF_VAR_*, TF_CLI_ARGS,
//     TF_CLI_ARGS_plan, TF_CLI_ARGS_init), not what only later commands
//     read (TF_CLI_ARGS_apply). The refusal names what changed, never a
//     value: the component's files by path (added, modified, removed;
//     ten, then "and N more") and the workspace by both names.
//   - records: every record the runner keeps in a data dir (init,
//     applied, plan and applying records, the journal, the saved plan and
//     its JSON renderings) is 0600 in 0700 dirs, a wider one an older
//     release left narrowed as it is read or rewritten, and holds
//     digests, names, paths and times, never a variable's value.
//   - plan bundles: ExportPlan writes a saved plan as one checked file
//     for another machine, ImportPlan makes it that machine's saved
//     plan; no terraform runs. Only a unit whose state is in a backend
//     every machine reaches has one: a unit on the local backend
//     (declared or implied) is refused on both sides (ErrLocalState),
//     since another machine would apply its plan against an empty state.
//     A key is all or nothing: given, the bundle carries an HMAC-SHA256
//     that ImportPlan checks with the same key; nil means no MAC; an
//     empty key is refused (ErrBadOption), and so is a bundle whose MAC
//     and the import's key do not go together (ErrPlanBundle).
//   - formats: every record a unit keeps (init, applied, journal, saved
//     plan, an apply under way) and every bundle names its format
//     version. A newer release's fails the unit with ErrNewerFormat
//     naming it, before anything reads or rewrites it; an earlier
//     release's is read (a plan bundle of one is refused by name: export
//     it again). A newer memory record is done without, with one
//     warning in Report.Warnings.
//
// The runner runs terraform itself, one process per command, with
// arguments it builds and tests (args.go): terraform-exec would start a
// version probe before every unit's first command and refuses TF_VAR_*
// and TF_LOG* in the environment. Terraform's environment is the
// process's (TF_VAR_*, TF_LOG*, TF_CLI_ARGS* and credentials pass through,
// so terraform applies its own precedence), then TF_DATA_DIR, the
// runner's CLI config (with a cache), then Unit.Env; TF_PLUGIN_CACHE_DIR
// and TF_WORKSPACE are dropped, TMPDIR points into the Run's private
// dir unless Unit.Env sets it, and CHECKPOINT_DISABLE=1 and
// TF_IN_AUTOMATION=1 are added unless the environment sets them.
// GOMAXPROCS, unless the environment already names it, is each
// process's share of the host's cores among the Run's running terraform
// processes (internal/tfcmd CoreShare): terraform and
// its providers are Go programs whose runtimes, one scheduler per core
// each, otherwise spin against each other when more run than there are
// cores. Custom steps get a *tfexec.Terraform
// (without TF_VAR_* and TF_LOG*, which terraform-exec refuses; VarOptions
// gives it the unit's variables) and Handle.Exec, which runs any
// subcommand with exactly this environment and the same process handling
// as the runner's own commands (interrupt, Stop, host death, journal);
// its stdout is returned to the step, never logged, and Handle.VarArgs
// gives the -var-file and -var arguments the runner would add.
//
// # Guarantees
//
//   - State locks are waited out: an attempt that meets a lock held by
//     someone else is retried with a growing -lock-timeout until
//     WithLockTimeout is spent, then fails with ErrStateLocked, whose
//     message names the holder, since when, and how to release the lock
//     (Runner.ForceUnlock). Each wait is one line in the unit's log;
//     Result.StateLock holds the holder as data. With
//     WithStaleLockRecovery, a lock that the instance's journal proves
//     this SDK's own crashed run left is released: its holder is this
//     user on this host and it was created while that run's last
//     terraform ran, no later than the engine's last sign of life the
//     runner can prove (its output's last write, a later run's wait
//     seeing it run), never "now". A lock taken once that engine was
//     gone, by a live run of the same user on the same host, is waited
//     for and named like any other holder's, never released.
//   - Transient failures (throttling, HTTP 429 and 5xx, connection resets,
//     TLS handshake timeouts; DefaultTransientErrors plus the caller's
//     patterns) of init and of the predefined commands are retried as
//     WithRetry says; each retry is an event and counted in
//     Result.Retries. Custom steps are not retried.
//   - Memory is a budget (WithMemoryBudget; by default read from the
//     host's cgroup limit or MemAvailable): a unit starts only when the
//     running units' use plus its expected peak fit, in the queue's
//     order, waiting only while other units run; each unit's process
//     trees are sampled while it runs (Result.MemoryPeak) and the peak
//     of each component is kept for the next Run, per engine and command
//     class (read, plan, apply, each custom step): a high-water mark a
//     lighter command never lowers, and a lighter run of the same class
//     lowers only a quarter of the way per Run; a class with no peak yet
//     takes the component's heaviest; Unit.ExpectedMemory raises a
//     unit's expectation. A unit the kernel killed for memory (its
//     terraform, or a provider killed while it starts or later) fails
//     with ErrOutOfMemory, with or without a budget, and, for commands
//     safe to repeat, runs once more when fewer units run.
//   - Cancelling ctx sends terraform SIGINT (it stops, writes state and
//     releases its lock) and kills it only after WithInterruptGrace; the
//     unit is Canceled. A Stop (WithStop) is the ladder a CLI maps Ctrl-C
//     to: drain, interrupt, kill; units that never started are in the
//     report (Result.Started false, ErrStopped). On Linux, what a
//     unit's terraform left running in its process group is killed, and
//     waited for, before the instance lock is released; after a
//     terraform that had to be killed or was interrupted, so is any
//     process carrying the unit's TF_DATA_DIR (a job that left the
//     group). A unit that ends cleanly costs one kill(2) per terraform
//     process, never a scan of the host's processes.
//   - The next run waits for what a crashed run left running: each
//     terraform process is recorded (PID, start time, process group, its
//     output file) in the instance's journal as it starts. The next run
//     of the instance, in any process on the same host, right after it
//     takes the instance lock and before anything reads or runs in the
//     workdir, waits for that engine (or the terraform a shim engine
//     started) to finish, at most WithCrashedEngineWait, with an event
//     naming the PID (Event.WaitPID); past the bound it fails with an
//     *EngineRunningError naming the PID and what to do, and never kills
//     it: it may be writing the state, and a state lock it holds is live
//     (WithStaleLockRecovery never touches it). Then what the crashed run
//     left in that process group (provider plugins, provisioner children)
//     is killed. Result.Crashed (and the JSON report) lists the crashed
//     runs found, the wait, what was killed and the crashed engine's kept
//     output. Linux only (it needs /proc and pidfds).
//   - A host that dies interrupts its engines, never kills them: on Unix
//     each terraform gets exactly one SIGINT when the host process dies
//     (as on a first Ctrl-C), so it stops at a safe point, writes its
//     state and releases its state lock. One tiny watcher per Run
//     (/bin/sh, its builtins only, started with the Run's first
//     terraform) keeps the process groups of the engines running and
//     reads a pipe only the host writes; the pipe ends when the process
//     does, whichever thread started terraform, so a healthy host never
//     interrupts its own runs. Terraform writes its
//     output to files of its own in the instance's data dir
//     (tfisolate-engine/, 0600), which the host follows as they grow,
//     never to a pipe whose lost reader would kill it; a crashed run's
//     engine output is kept there.
//   - The Run's terraform processes and their providers get TMPDIR (TMP
//     and TEMP on Windows) inside its private dir, unless Unit.Env sets
//     it: the temp files and plugin sockets of a killed provider are
//     removed with that dir, or swept by the next Run after a crash,
//     never left in the user's temp dir.
//   - Output goes to a log file per unit (Result.Log) and, with
//     WithOutput, to one combined stream of whole lines prefixed
//     "[unitID] ", never interleaved.
//   - Events are delivered one at a time, in order: every selected unit
//     sends PhaseQueued first and PhaseDone last. A unit kept waiting by
//     someone else's lock says so as it happens: PhaseWait events with
//     Event.Wait (the instance lock with its holder's PID, host and
//     since when; the state lock with terraform's holder and the next
//     attempt's patience) when the wait starts and when it ends, with the
//     time waited, so a progress display never shows "apply running"
//     for a unit that waits.
//   - Report, Result and Event have a documented JSON form.
//   - Run returns only after every goroutine and process it started has
//     ended.
//   - A unit sees the configuration files its engine reads, decided in
//     one place (internal/modtree's Files): terraform *.tf and *.tf.json;
//     OpenTofu also *.tofu and *.tofu.json, a NAME.tofu hiding NAME.tf
//     and a NAME.tofu.json hiding NAME.tf.json. The workdir's layout
//     (Run sets workdir.Spec.Engine), module calls and the module key,
//     provider requirements, the backend fingerprint and the init record
//     all follow it; Affected, which has no engine, takes both engines'
//     files.
//   - Early evaluation (OpenTofu 1.8 and later, Terraform 1.15 and later,
//     decided in one place from the engine's kind and version): init,
//     get, validate and show of a saved plan (and workspace select under
//     OpenTofu) get the unit's -var-file and -var arguments, and the
//     values the backend and the module sources and versions read
//     (defaults, TF_VAR_*, tfvars files, Args.VarFiles, Args.Vars,
//     through locals) are part of the init record: a backend built from a
//     variable whose value changed is a changed backend, a module source
//     or version built from one keys the module fetch and store by those
//     values, never shared with a unit that gives other values (nor, when
//     the source cannot be evaluated, with another component). A root
//     module source that is an expression is evaluated from those values
//     by the engine's own rule (Terraform: literals and const variables;
//     OpenTofu: no sensitive value), with locals, path.module and the
//     functions the engine has at init (never an impure one, never
//     guessed), and given to the workdir (workdir.Spec.ModuleSources), so
//     the local module it selects, outside the component too, is in the
//     workdir; one left to the engine whose known part starts with a
//     local path outside the component has the directory that path
//     names in the workdir. Affected follows the values under each engine's rule (a
//     source an engine refuses reaches no module under it), and counts
//     every change for a unit whose source it cannot evaluate.
package runner
