// Package modtree is the one walk of a Terraform (or OpenTofu) module
// tree that the SDK does: from a root module directory through every
// module call, following local sources recursively, the way terraform
// init resolves them. It is also the one place that decides which files
// of a module directory are configuration (Files).
//
// Walk parses each directory with terraform-config-inspect and returns a
// Tree: every module instance by its key path ("" is the root, "a" a call
// in the root, "a.b" a call in that module, as in terraform's
// modules.json), the calls' sources and version constraints, and the
// parsed configuration of every local module directory. ReadBackend reads
// a root module's backend block, for what local state settings it has.
//
// Guarantees:
//
//   - One rule for configuration files, the engine's (Files):
//     TerraformFiles reads *.tf and *.tf.json, TofuFiles also *.tofu and
//     *.tofu.json, a NAME.tofu hiding NAME.tf and a NAME.tofu.json hiding
//     NAME.tf.json, as OpenTofu's loader does; hidden and editor backup
//     files are never read. Walk, ReadBackend, RemoteStatePaths and
//     ReadConfig all take their files by it. terraform-config-inspect
//     knows only terraform's extensions: the walk lists a NAME.tofu to it
//     as the NAME.tf it hides, and reports the real names back.
//   - A module source or version built from variables, locals, path
//     attributes or functions (early evaluation: OpenTofu 1.8, Terraform
//     1.15) is a Dynamic call: its text is kept, and it is never local
//     and never followed, unless WalkWith is given the value of a root
//     module call's source (the runner evaluates it from the unit's
//     variables): then that value is followed like a literal source.
//     Nothing here evaluates an expression: the walk never guesses.
//
// terraform-config-inspect still earns its place: it reads every block
// the SDK needs (module calls, required_providers, backends) from HCL and
// JSON alike, its partial schemas pass over what it does not know
// (Terraform 1.15's `const = true`), it hands an expression in a module
// source back as its text (which DynamicExpr then recognizes), and the
// walk lists .tofu files to it under the names they hide. What it cannot
// do, evaluate, is not its job: runner/early.go evaluates what the engine
// evaluates at init, with the unit's values, and refuses to guess the
// rest.
//   - One rule for local sources, terraform's: a source is local exactly
//     when it starts with "./" or "../" (IsLocal). Every other source is
//     remote: it is listed with its version constraint and not followed.
//   - A local call's directory is its parent's directory joined with the
//     source, cleaned lexically, as terraform does; symlinks on the way are
//     kept in Dir (the path as reached) and resolved in Module.Resolved.
//   - Each directory is parsed at most once (by resolved path), however
//     many instances call it; and each distinct module is parsed once per
//     process, wherever it lies: a parse is remembered by what it read
//     (the engine's rule and every configuration file's name and
//     content), so a hundred workdir copies of one component cost one
//     parse of each of its modules plus a read of their files. A changed
//     file is a different key, so a remembered parse is never stale; the
//     memo holds a bounded number of modules. Each Walk gets its own
//     Module values with paths and positions of its own directories.
//     ReadBackend likewise parses each distinct file content once; its
//     results and errors name the file where it was read.
//   - Parse errors never stop the walk: they are recorded on the module
//     (Module.Err wraps ErrParse) and whatever parsed is still followed. A
//     local source whose directory is missing is recorded (Module.Err wraps
//     ErrMissing), not fatal. A call that leads back to a directory on its
//     own chain of callers (resolved paths compared, so a symlink loop
//     counts) is listed with Cycle set and not followed. Tree.Err joins all
//     of these; callers decide whether they are fatal.
//   - No file is ever opened unless it is a regular file: FIFOs, sockets
//     and devices named like configuration are skipped (listed in
//     Module.Skipped), and files are opened non-blocking and checked after
//     opening, so a walk never hangs on one.
//   - Walk and ReadBackend only read.
package modtree
