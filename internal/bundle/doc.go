// Package bundle is the format of a plan bundle: one unit's saved plan,
// carried to another machine or workdir root as one self-contained,
// verified file. It writes and reads bundles; what goes in one (which
// plan, whether it is stale, whether its state can move) is the
// runner's to decide.
//
// A bundle is an uncompressed tar of
//
//	manifest.json   the runner's record of what the plan was made from,
//	                the type of the backend that keeps the unit's state,
//	                and the sha256 of every other member, with a digest of
//	                all of it and, when the host gave a key, an HMAC
//	plan.tfplan     terraform's saved plan
//	plan.json       terraform show -json of it
//	lock.hcl        the dependency lock file the plan was made with, when
//	                there was one
//
// Guarantees:
//
//   - Write writes the bundle 0600 (it holds what terraform's plan holds,
//     sensitive values included), atomically (a reader sees the old file
//     or the whole new one), creating its dir 0700.
//   - The manifest names its format, tfisolate-plan-bundle/Version (2),
//     bumped whenever what the manifest holds or its digest covers
//     changes (the runner's record included). Read refuses a newer
//     format by name, first, whatever the rest of the manifest holds: a
//     *RefusedError wrapping a *format.NewerError ("written by a newer
//     release: format N; this release reads up to 2; upgrade this job"),
//     never "damaged or altered". Version 1 bundles (earlier releases',
//     in three shapes under one name) are refused by name as an older
//     release's: export the plan again.
//   - The digest (sha256) and the MAC (HMAC-SHA256 with the host's key)
//     cover the format, the unit, the record, the backend type and each
//     member's sha256; not when or where the bundle was made. A manifest
//     altered to record no backend type still matches its digest, so Read
//     refuses it for what it lacks, by name.
//   - Read reads at most 1 GiB and believes nothing before it has checked
//     it: a regular file, a tar of known members only, each once, the
//     manifest's format version, its digest, the unit it is for, its MAC, its
//     backend type, and every member against the manifest, the plan and
//     lock members against the record. Anything else is a *RefusedError
//     naming the bundle and what is wrong.
//   - A key and a MAC go together: a bundle with a MAC read without a key
//     is refused (the reading side's secret is missing: a digest alone
//     anyone can recompute), and so is a bundle without a MAC read with a
//     key (a downgrade). The MAC is compared in constant time.
//   - A bundle whose record says its state is in the local backend, or
//     says nothing of its backend, is refused: its RefusedError says
//     which (LocalState).
//   - Path is where a unit's bundle lives in a dir, from a file name the
//     caller makes unique per unit.
package bundle
