// Package pluginc is a provider cache that any number of goroutines and
// processes can share safely, and that Terraform reads but never writes.
//
// Open a Cache on a directory, Ensure the providers a configuration needs,
// then hand Terraform CLIConfig() (the cache as a filesystem_mirror) and
// LockFile() (a .terraform.lock.hcl identical to what terraform init would
// write). Providers come from the sources given to WithSource, tried in
// order: Registry (the provider registry protocol with service discovery
// and TF_TOKEN_<host> credentials), NetworkMirror and FilesystemMirror.
//
// Guarantees:
//
//   - A cache entry is either absent or complete. A package is downloaded
//     to a temp file, verified (its SHA-256 against a SHA256SUMS document
//     whose OpenPGP signature matches the registry's keys, or against a
//     mirror's hashes), unpacked into a temp dir in the cache's own
//     filesystem, fsynced and renamed into place as
//     DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH. A process killed at any
//     point leaves only temp files in DIR/.pluginc/tmp, which the next
//     Open or the next installer of that package removes, each only while
//     holding that package's lock (so never a live process's files).
//   - Each package is downloaded at most once per cache directory however
//     many goroutines and processes ask for it at once: callers in one
//     process share one attempt (singleflight), processes take a per-package
//     flock in DIR/.pluginc/locks (lock files are never deleted), and
//     whoever waited gets the finished package.
//   - Nothing unverified enters the cache: every failure (bad checksum,
//     bad signature, truncated body, HTTP error) is an *InstallError naming
//     the provider, version, platform and URL, wrapping a sentinel from
//     errors.go.
//   - Version selection follows Terraform: the newest version satisfying
//     every constraint, pre-releases only when named exactly, a locked
//     version honoured as is and, given the lock file's hashes, a package
//     matching none of them refused (see ParseLockFile and
//     Lock.Requirement). Once a package is in the cache, a locked
//     requirement is answered without any network request; version lists
//     are fetched once per Cache.
//   - CLIConfig never uses plugin_cache_dir, whose writes are not safe
//     under concurrency.
package pluginc
