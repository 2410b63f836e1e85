// Package backendcfg is what the runner knows about a root module's
// backend without running the engine: the digest of its configuration
// (the init record's Backend, which tells a changed backend from any
// other change), the backend the engine recorded in a data dir at its
// last init, the one the files configure now, and a one-line description
// of either for the refusal of a changed backend. It reads files and
// never writes; deciding what a change means (migrate, reconfigure,
// refuse) is the runner's.
//
// Guarantees:
//
//   - Digest covers the backend and cloud blocks inside terraform blocks
//     however they are written: HCL (.tf, .tofu) by their source text,
//     JSON (.tf.json, .tofu.json; one terraform object or a list) by
//     their settings re-encoded canonically. Blocks are sorted, so moving
//     one to another file is no change, and nothing outside them counts
//     (a comment, a resource, a required_version). A file that does not
//     parse gives no block: the engine reports it.
//   - Digest also covers each -backend-config argument as given and the
//     content of the file it names (relative to the module dir; a
//     "key=value" only when a file of that name exists; regular files
//     only), and the early-evaluation digest the caller passes.
//   - Digest is "" when the module declares no backend and no cloud
//     block, whatever the arguments. Its encoding is fixed and pinned by
//     a test: init records on disk written by earlier versions keep
//     matching; a change would make every instance's backend look
//     changed once (init runs again, and a backend change is refused
//     where the old state may hold resources).
//   - Each distinct HCL file content is parsed once per process (a
//     bounded memo keyed by its SHA-256: never stale), so a component's
//     hundred instances cost one parse.
//   - Recorded reads the engine's own record (terraform.tfstate in the
//     data dir); no record, or one that does not read, is the default
//     local backend, never an error.
//   - String shows a backend's type and only the settings that say where
//     the state is (path, bucket, key, region, address, ...); never
//     another setting (credentials), and an address without its user
//     info and query. A setting the engine evaluates at init is shown as
//     its expression (var.state_path), never guessed.
//   - LocalStatePath resolves the local backend's state file for a
//     workspace as the engine does: path (default terraform.tfstate) for
//     the default workspace, WORKSPACE_DIR/NAME/terraform.tfstate
//     (default terraform.tfstate.d) for another, relative to the module
//     dir.
package backendcfg
