// Package modmanifest reads and rewrites terraform's (and OpenTofu's)
// module manifest, TF_DATA_DIR/modules/modules.json: the record of which
// module call is installed from which source, at which version, in which
// directory. The runner fetches a module tree once and copies it into
// each unit's data dir; this package makes the copy's manifest point
// into the copy, and tells whether a unit's manifest already matches.
//
// Guarantees:
//
//   - Parse reads the fields the runner uses (Key, Source, Version, Dir)
//     and ignores the rest; a manifest that is not JSON is an error that
//     names modules.json.
//   - Rebase changes only the Dir of records that lie under origin (a
//     relative Dir resolved against workdir): such a Dir is rewritten to
//     the same place under dst, slash-separated. Every other record (local
//     modules, outside origin) and every other field, known to this
//     package or not, is kept as terraform wrote it, so a field a newer
//     engine adds survives the rewrite.
//   - Same compares what two manifests record, not their bytes: the
//     order of records and the formatting of the JSON do not count, Dirs
//     are compared cleaned. A manifest that does not parse, or has no
//     Modules list, is never the same as another.
//
// It only parses and rewrites bytes: it reads and writes no file.
package modmanifest
