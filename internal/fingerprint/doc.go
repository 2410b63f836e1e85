// Package fingerprint is the digest of what a record depends on, for
// every record the runner compares with now: the init record (init is
// skipped when nothing it reads changed), the applied record (a unit is
// skipped as unchanged) and a saved plan's record (a stale plan or bundle
// is refused). A Fingerprint is fed named fields (Add, AddString,
// AddFile) and gives one hex SHA-256 (Sum); beside it, Parts keep a
// digest per named input, so that a record that differs can be explained
// by the names of the inputs that changed (ChangedParts).
//
//	p := fingerprint.Parts{}
//	fp := fingerprint.NewWithParts(p)
//	fp.AddPart("env TF_VAR_region", fingerprint.EnvLabel("TF_VAR_region"), []byte("eu-west-1"))
//	rec := record{Digest: fp.Sum(), Parts: p.Sums()}
//	// later: fingerprint.ChangedParts(rec.Parts, now.Parts) -> ["TF_VAR_region"]
//
// Guarantees:
//
//   - The encoding is fixed: each field is hashed as "NAME LEN\n" and then
//     its LEN bytes, in the order added, into one SHA-256. A value never
//     runs into the next field, the order counts, an empty field counts,
//     and two different lists of fields never hash alike. The encoding is
//     pinned by a test: records on disk written by earlier versions keep
//     matching, and a change to it would make every one of them differ
//     once (init runs again, nothing is skipped, saved plans are refused
//     as stale).
//   - AddFile hashes a file's content; a missing or unreadable file counts
//     as empty, never as an error (a lock file not written yet).
//   - A part is a SHA-256 of "LEN\n" and the bytes of each value its
//     input added, in order; a label added twice is one part. Parts and
//     ChangedParts hold and print digests and labels only, never a value,
//     so naming what changed never leaks a secret. ChangedParts is sorted
//     and marks an input only in the record "(removed)" and one only now
//     "(added)".
//   - ChangedFiles names the files that differ between two maps of path
//     to digest (added, modified, removed; each sorted and quoted, at
//     most FilesShown paths, then "and N more"): paths only, never a
//     digest or content.
//   - A Fingerprint made by New, or with a nil Parts, keeps no parts; its
//     Sum is the same as with parts kept: parts never change the digest.
//   - EngineID and EnvLabel are the names records use for the engine (its
//     kind and version) and for an environment variable (a TF_VAR_ by its
//     own name, anything else as "env K"); records on disk hold them, so
//     they are as fixed as the encoding.
//
// The backend's own digest (internal/backendcfg's Digest, inside the
// init record) keeps an encoding of its own and is not made here.
package fingerprint
