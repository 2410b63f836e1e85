// Package workdir gives every Terraform root-module instance its own
// working directory, so that many instances (many instances of one component
// in one stack included) can run at the same time without sharing any file
// Terraform writes.
//
// A Manager owns a root directory:
//
//	ROOT/.locks/ID.lock            flock file of the instance (never deleted)
//	ROOT/.locks/ID.holder.json     pid, host and time of the current holder
//	ROOT/.tmp/ID/                  scratch for cold builds and removals
//	ROOT/ID/                       the instance home
//	ROOT/ID/.tfisolate/stamp.json  what the home was built from; written last
//	ROOT/ID/.tfisolate/data/       TF_DATA_DIR (see Workdir.Env)
//	ROOT/ID/src/...                the component and its local modules
//
// ID (see the ID function) is derived from the stack and the full instance
// path. Under src/ the component and every module it reaches through local
// sources ("./x", "../../modules/redis", recursively, found with
// terraform-config-inspect) are copied at the same positions relative to
// their common ancestor, so relative module sources resolve. Workdir.Dir is
// the component inside that layout.
//
// Guarantees:
//
//   - The source tree is only read. Files are cloned copy-on-write (FICLONE)
//     where the filesystem supports it and copied otherwise; never hard-linked.
//   - Prepare holds an exclusive flock on the instance until Workdir.Close,
//     across goroutines and processes, waiting under the caller's context. A
//     wait that ends returns a *LockedError naming the holder.
//   - A new home is built in ROOT/.tmp and renamed into place. A refresh
//     replaces each changed file by rename and deletes files the source no
//     longer has, between an "incomplete" stamp written first and a complete
//     stamp written last (after a syncfs), so a process killed at any point
//     leaves a home the next Prepare finishes. An unchanged source costs one
//     hash of the source set and no copy.
//   - Instance-owned data survives every refresh: the data dir,
//     terraform.tfstate* and terraform.tfstate.d/, *.tfplan plan files, a
//     .terraform directory, and the instance's .terraform.lock.hcl. A lock
//     file in the component's source seeds the instance's, and replaces it
//     again only when the source's lock file changes. Nothing outside the
//     files a previous build copied or generated is ever deleted.
//   - Generated files (Spec.Files) are written atomically into Workdir.Dir;
//     names that escape it or would overwrite instance-owned data are refused.
//   - Bad input is refused before anything is written, with an *InputError
//     (wrapping ErrInvalid) that names the input.
//
// Source files named terraform.tfstate*, *.tfplan, .terraform.lock.hcl (other
// than the component's own), and directories named .terraform, .git and
// terraform.tfstate.d are not part of the source set. Symlinks to files are
// materialized as their content. Symlinks to directories inside the source
// set are skipped; a symlinked component or module directory itself is
// followed.
//
// Durability: the files of a build are flushed with one syncfs(2) (sync(2)
// outside Linux) before the complete stamp is written, so a power loss
// cannot leave a complete stamp over missing data either.
package workdir
