// Package workdir gives every Terraform root-module instance its own
// working directory, so that many instances (many instances of one component
// in one stack included) can run at the same time without sharing any file
// Terraform writes.
//
// A Manager owns a root directory:
//
//	ROOT/.locks/ID.lock            flock file of the instance (never deleted);
//	                               in it, pid, host and time of the current holder
//	ROOT/.locks/.adopted.lock      flock of the register of adoptions (never deleted)
//	ROOT/.adopted.json             index of the adoptions the homes record (Spec.AdoptState)
//	ROOT/.tmp/ID/                  scratch for cold builds and removals
//	ROOT/ID/                       the instance home
//	ROOT/ID/.tfisolate/stamp.json  what the home was built from; written last
//	ROOT/ID/.tfisolate/files.json  each file the build materialized from the source: path, digest
//	ROOT/ID/.tfisolate/state.json  state adopted from the source; the last complete state seen
//	ROOT/ID/.tfisolate/data/       TF_DATA_DIR (see Workdir.Env)
//	ROOT/ID/src/...                the component and its local modules
//
// ID (see the ID function) is derived from the stack and the full instance
// path. Under src/ the component and every module it reaches through local
// sources are copied at the same positions relative to their common
// ancestor, so relative module sources resolve. Local sources are found the
// way terraform finds them (internal/modtree: a source is local exactly when
// it starts with "./" or "../"; calls are followed recursively, paths joined
// lexically as terraform does; parse errors and missing directories are
// left for terraform to report, what parsed is still followed). Workdir.Dir
// is the component inside that layout.
//
// Guarantees:
//
//   - Spec.Engine decides which files of the component and its local
//     modules are configuration (terraform: *.tf, *.tf.json; OpenTofu also
//     *.tofu, *.tofu.json, a NAME.tofu hiding NAME.tf), for every walk the
//     workdir makes: the local modules the layout holds, the local
//     backend's state places (instance-owned data, adoption, Remove,
//     CheckState) and the terraform_remote_state inputs. Every source
//     file is copied whatever the engine. The stamp records the engine; a
//     Prepare under another engine rebuilds the layout.
//   - The source tree is only read (invariant 1 in ARCHITECTURE.md). Files are cloned
//     copy-on-write (FICLONE) where the filesystem supports it and copied
//     otherwise, data segments only (SEEK_DATA/SEEK_HOLE), so a sparse
//     file's holes stay holes in every instance; never hard-linked. A source that contains the root, or lies
//     inside it, is refused, with paths compared both as given and with
//     symlinks resolved; a root reached through a symlink inside a local
//     module's directory is never entered.
//   - One instance, one home (invariant 2): see ID.
//   - Prepare holds an exclusive flock on the instance until Workdir.Close,
//     across goroutines and processes, waiting under the caller's context
//     (invariant 3). A wait that ends returns a *LockedError naming the
//     holder; a wait that succeeds is reported in Workdir.LockWait and
//     Workdir.Holder, and, under a context from WithLockWait, as it
//     happens: when it starts, when the holder changes, when it ends.
//   - A new home is built in ROOT/.tmp and renamed into place. A refresh
//     replaces each changed file by rename and deletes files the source no
//     longer has, between an "incomplete" stamp written first and a complete
//     stamp written last (after a syncfs), so a process killed at any point
//     leaves a home the next Prepare finishes. An unchanged source costs a
//     stat of each file of the source set and no copy: a Manager reads
//     and hashes each source file once, however many instances share it.
//   - What a refresh trusts: a source file this Manager has already hashed
//     is not read again while a fresh stat shows the same inode, size,
//     mode, mtime and ctime (links followed) as the file it read; any
//     write, replacement or chmod moves the ctime, which no user can set
//     back. A digest is remembered only for a file last changed well
//     before the read (50 ms; 2 s where the filesystem keeps whole
//     seconds), so a write in the same clock tick as the read is never
//     missed. Where those stats can lie (a network mount caching
//     attributes; platforms other than Linux and macOS show only the
//     mtime), set Spec.Rehash to read every file again. Digests live in
//     the Manager's memory only. The copy itself is always verified: a
//     cold build or a refresh that copies hashes what it wrote, read back
//     from the workdir.
//   - The stamp describes what was written: each copied file's digest is
//     taken from the copy, so a source file that changes while it is copied
//     (and changes back later) is copied again by the next Prepare.
//   - Every record names its format version (the stamp, the instance's
//     state record, the root's register of adoptions). One of a newer
//     release is never read, rebuilt or written over: Prepare and Remove
//     of that instance, and an adoption under a newer register, fail
//     with ErrNewerFormat naming it, and leave it as it is.
//   - Instance-owned data survives every refresh (invariants 4 and 13): the
//     data dir; every state-like file (terraform.tfstate*, any *.tfstate
//     and its .backup and other derivatives, terraform.tfstate.d/, and the
//     local backend's path and workspace_dir as configured in the source or
//     the generated files, and as the engine recorded them in the data dir
//     at its last init: a path given with -backend-config or built by
//     early evaluation (OpenTofu, Terraform 1.15) from a variable is known
//     only there);
//     *.tfplan plan files; a .terraform directory;
//     and anything else in the workdir that no build copied or generated.
//     Nothing outside the files a previous build copied or generated is
//     ever deleted, and state-like files are not deleted even where an
//     older version once copied them.
//   - When the layout changes (the component starts or stops calling a
//     local module outside its own directory, so Workdir.Dir moves), all of
//     the instance's data at the component's old position moves with it, by
//     rename, including state the local backend keeps outside the component
//     directory ("../state/x.tfstate"). Nothing is overwritten: data that
//     would replace something at the new position stops Prepare with an
//     error wrapping ErrLeftBehind naming both paths, and the next Prepare
//     tries again.
//   - The dependency lock file follows the source's: the component's
//     .terraform.lock.hcl in the source seeds the instance's, replaces it
//     again when the source's changes, and when the source drops its lock
//     file, the instance's lock file goes too. A lock file written while
//     the source had none (by terraform init or the caller) is the
//     instance's own and survives every refresh.
//   - Generated files (Spec.Files) are written atomically into Workdir.Dir;
//     names that escape it or would overwrite instance-owned data are refused.
//   - A local module call (the component's or a local module's, a
//     Spec.ModuleSources value included) whose directory lies outside
//     the component's repository (Spec.Repository: by default the
//     nearest directory holding .git) is refused with an
//     *OutsideRepositoryError (ErrOutsideRepository) naming the call, its
//     source and the directory, before anything of the instance is
//     written: "../../../../usr/share/doc" is never copied into every
//     instance.
//   - A source set over the materialization budget (WithBudget; by
//     default DefaultBudgetBytes and DefaultBudgetFiles per instance,
//     room for a lambda's node_modules five times over) is refused with
//     ErrBudget naming the file where the budget ran out, before
//     anything of the instance is written: a stray huge file is never
//     copied into every instance.
//   - Bad input is refused before anything is written, with an *InputError
//     (wrapping ErrInvalid) that names the input (invariant 9). Check makes
//     every such check without writing or locking; Prepare starts with it.
//   - New refuses an invalid option with an *InputError naming it;
//     WithLogger(nil) means discard.
//   - Nothing blocks forever: only regular files are ever opened (a FIFO,
//     socket or device in the source is skipped and logged; files are opened
//     non-blocking), and the context is checked between files and between
//     reads while the source is hashed and copied.
//   - Remove refuses, without force, while any state-like file in the
//     workdir records resources (a backup included: an emptied
//     terraform.tfstate beside a backup with resources still counts), and
//     names the files.
//   - A state the package cannot read is never taken for an empty one:
//     an OpenTofu encrypted state (JSON with encrypted_data and no
//     resources), a cut-off file and a legacy (version < 4) state count as
//     holding resources everywhere state is read (Remove, the source-state
//     check, adoption).
//   - A component's own state is never ignored: when the source holds
//     state that records resources or outputs where the component's
//     backend keeps it (the local backend's path, terraform.tfstate by
//     default, and each workspace's file under its workspace_dir),
//     Prepare refuses an instance that has no state of its own with a
//     *SourceStateError (ErrSourceState) naming each file and its
//     resource (and output) count. With Spec.AdoptState those files are
//     copied once (atomically, 0600, under the instance lock; recorded in
//     ROOT/ID/.tfisolate/state.json last),
//     and never again; adoption over instance state that records
//     resources is refused, copying nothing. A state is adopted into one
//     instance only (invariant 13): the instances' own records
//     (ROOT/ID/.tfisolate/state.json) say who adopted what, and
//     ROOT/.adopted.json is their index, naming each owner's stack and
//     instance, the state's lineage and its source file. A second
//     instance asking for the same state (the same lineage wherever the
//     file now is, or the same source file) is refused with an
//     *AdoptedError (ErrAdopted and ErrSourceState) naming every current
//     owner (AdoptedError.Owners), copying nothing. The index is never
//     believed over the records: a release that does not
//     know it may have adopted into an instance or removed an owner
//     without touching it, so every adoption reads every home's record
//     (one small file per home, parsed only when it names an adoption)
//     and believes a claim of the index only as a record, or a copy of
//     the state in the claimant's workdir, bears it out; an owner whose
//     home is gone is no owner, an owner only a record names is named by
//     its workdir ID until a Prepare of it (while the source still holds
//     the state) gives the index its name, and a successful adoption
//     rewrites the index as the records show it. The index is checked and extended under one
//     root-wide flock (ROOT/.locks/.adopted.lock), claims written before
//     the copies, so processes adopting at once end with one owner, and a
//     kill or a failed copy leaves a claim (the instance's next adoption
//     finishes it) that keeps the state the instance's while its workdir
//     holds a copy, never a second owner. The index is replaced
//     atomically and believed only as the effective user wrote it
//     (invariant 12: another's file, one others could write, or one that
//     is not the SDK's JSON stops the adoption by name; so is a record:
//     one others could write names no owner).
//     The owner adopting again (an idempotent Prepare) goes on; Remove
//     gives the owner's adoptions up. State the backend does not
//     use but plain terraform in the component dir would stop to ask
//     about migrating (terraform.tfstate and terraform.tfstate.d beside
//     another backend; the state of the local backend the component's
//     own .terraform records, when the configuration names another) is
//     refused the same way (SourceStateError.Left) and never adopted. A
//     source state with neither resources nor outputs, an empty one, and
//     state at an absolute path do not block.
//   - A state file the configuration only reads (a literal local path of a
//     terraform_remote_state data source, in the component or its local
//     modules, inside the component dir) is an input: it is copied and
//     refreshed like configuration and is part of Workdir.Digest; an
//     untouched copy is not counted as instance state by Remove.
//   - Workdir.CheckState refuses (ErrStateDamaged) a local state file that
//     is empty or cut off while a backup beside it or the workdir's record
//     shows the instance had a state, naming the file, the backup and the
//     recovery steps; it never restores the backup.
//   - Only what the effective user or root wrote is believed (invariant 12,
//     internal/pathtrust, the rule the provider cache and the module store
//     follow). New, and every Prepare, refuse a root that is not owned by
//     the effective user (or root) or that its group or others can write
//     to, a dir above it that others can write unless it is sticky (as
//     /tmp is: fine above the root, not as the root), and .locks or .tmp
//     dirs of another user's; a root that is a symlink is checked where
//     it points, and the link's own dir too. Under the instance lock,
//     Prepare refuses a home (or its .tfisolate or src dir) that is not a
//     directory of the effective user's or root's or that its group or
//     others can write: another user's home, made before the first run or
//     swapped in since, is never refreshed in place, and nothing is
//     written in it. Each refusal is an *UnsafePathError (ErrUnsafePath)
//     naming the path, its owner and its mode. New homes are fresh 0700
//     dirs.
//   - A stamp is believed only if every path it lists (the component, the
//     files and generated files a refresh removes, earlier component
//     positions whose data it moves, source dirs, inputs) is local and
//     clean (filepath.IsLocal) and its sources absolute and clean;
//     otherwise it is ignored, as an unreadable stamp is, and the home is
//     materialized again from the source (files the ignored stamp listed
//     are then left where they are, never removed). Removals and renames
//     never follow a symlink out of the home: a path whose way from the
//     home goes through a link is refused.
//   - Records are private and hold no values: the lock files, the
//     adoption register, the stamp, files.json and the state record are
//     0600, generated files (a tfvars may hold a secret) too, and the
//     .locks dir, each home, its .tfisolate dir and its data dir 0700;
//     one an older release left wider (0644, 0755) is narrowed by the
//     instance's next Prepare (never through a link). Copied source
//     files keep the source's mode. The stamp keeps Spec.ModuleSources
//     as a SHA-256 digest (stamp version 2; a version 1 stamp, which kept
//     them in clear, is read and rewritten), never the values: a source
//     evaluated from a variable may carry a credential.
//   - Workdir.SourceFiles names each file a build materialized from the
//     source by its path from the component, with a digest of its
//     content and mode, read from files.json only when asked for; a
//     home an older release built gets it on its next Prepare that finds
//     the home up to date.
//   - Workdir.Digest identifies exactly what was materialized (files copied
//     from the source as written, the seeded lock file, generated files):
//     equal across Prepares if and only if terraform is given the same
//     configuration.
//
// The source set: directories named .terraform, .git and
// terraform.tfstate.d, state-like files (other than remote-state inputs),
// *.tfplan files, lock files other than the component's own, and anything
// that is not a regular file are never copied; state-like files found in the source are named in one Info
// log record per Prepare. Symlinks are followed: a linked file is
// materialized as its content, a linked directory (a module directory that
// is a link, or a modules -> ../shared-modules link) as a real directory at
// the link's position, so terraform resolves it in the workdir exactly as
// in the source. A link that leads back to a directory on its own path (a
// loop) or into the root is not followed, and is logged.
//
// Not seen: settings given to terraform outside the configuration files,
// such as -backend-config path=... or a -state flag; local state kept there
// is the caller's to place.
//
// Durability: the files of a build are flushed with one syncfs(2) (sync(2)
// outside Linux) before the complete stamp is written, so a power loss
// cannot leave a complete stamp over missing data either.
package workdir
