// Package modinstall gives a unit's data dir its own copy of a module set
// fetched once for many units (terraform get's modules directory), and
// decides which units may share one fetch. It knows nothing of the
// runner, the module store or the engine: it keys module trees, copies
// sets and compares manifests.
//
// Guarantees:
//
//   - Key depends only on the module calls (key path, source, version
//     constraint, and for a call built from variables what the caller
//     says its value depends on), never on the order they were found in
//     or on where the component lies: the same component elsewhere has
//     the same key, another local layout another one. The key is the
//     module store's: its text never changes between releases without a
//     reason, since a changed key refetches every set. A source the
//     caller evaluated from variables is in the key as its text and a
//     SHA-256 of its value, never the value (it may carry a credential;
//     the key is logged and kept in the store's records).
//   - Install never leaves a data dir with half a set: the copy is built
//     beside the target and renamed into place, so a crash leaves the old
//     modules, the new ones or none, and the leftovers of such a crash are
//     removed by the next Install. The installed manifest points into the
//     data dir it is installed in (modmanifest.Rebase); the origin record
//     of a stored set is not copied in.
//   - Never older: with neverOlder, Install does not replace a data dir's
//     modules with a set holding an older version of a module it has
//     (Older), as long as the call's constraint still allows the version
//     it has; it says which modules, and leaves the data dir byte for byte
//     as it was. A data dir whose manifest already records the same
//     modules is left as it is either way.
//   - WriteOrigin and ReadOrigin keep, inside a stored set, where its
//     manifest's paths came from, so that each copy can be rebased onto
//     its own data dir; the record's JSON form is stable.
//
// The caller holds what serializes writers of a data dir (the runner's
// instance lock): Install does not lock.
package modinstall
