// Package affected maps a set of changed paths (the output of git diff
// --name-only, say) to the units whose runs those changes can affect. It
// reads the component sources and the local modules they reach; it never
// runs an engine and never writes.
//
// Guarantees:
//
//   - A unit is affected by a path inside its component directory or
//     inside a local module it reaches, through any number of module
//     calls, found with the module walk the workdir uses
//     (modtree.WalkWith) under both engines' configuration files: there
//     is no engine here, so a module called only from a .tofu file
//     counts, and so does one called from a main.tf that a main.tofu
//     hides from OpenTofu.
//   - A symlink inside those directories is copied into the workdir as
//     what it points at, so a change to its target counts too (a file
//     matches itself, a directory everything under it); .terraform, .git
//     and terraform.tfstate.d are not looked into.
//   - An absolute var file or -backend-config file (not a KEY=VALUE that
//     names no file) affects the unit that names it.
//   - Relative paths are relative to base; symlinks are resolved on both
//     sides; a deleted path resolves through its longest existing
//     parent, so it still affects its directory.
//   - A root module whose module sources are expressions reaches the
//     modules the unit's values select (Unit.ModuleSources, else
//     Unit.Evaluate, by each engine's rule: a source an engine refuses
//     reaches no module under it); where one cannot be evaluated, under
//     either engine's rule, every change counts:
//     Units may report more units than a change affects, never fewer.
//   - Cost follows distinct sources: what follows from a component's
//     directory is walked once for all its instances (once per distinct
//     set of evaluated sources), however many units share it.
//   - Units are returned in the order given, by ID.
package affected
