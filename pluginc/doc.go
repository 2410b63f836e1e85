// Package pluginc is a provider cache that any number of goroutines and
// processes can share safely, and that Terraform reads but never writes.
//
// Open a Cache on a directory, Ensure the providers a configuration needs,
// then hand Terraform CLIConfig() (the cache as a filesystem_mirror) and
// LockFile() (a .terraform.lock.hcl identical to what terraform init would
// write). Providers come from the sources given to WithSource, tried in
// order: Registry (the provider registry protocol with service discovery
// and TF_TOKEN_<host> credentials), NetworkMirror and FilesystemMirror
// (Terraform's packed and unpacked layouts), or a caller's own Source (a
// host's artifact store): Source is a small public interface (Versions,
// Fetch of a PackageID into a temp file) that the built-in sources
// implement like any other. A source that fails to list or to deliver
// a package is logged and the next source offering the version is
// tried. MirrorHandler serves the cache itself to other machines as a
// network mirror, so a fleet downloads each package from upstream once.
//
// The user's own CLI config: package cliconfig finds and reads it as
// Terraform does (HCL 1 or JSON); CLIConfigFor(file) is CLIConfig with the user's
// credentials, credentials helper, host blocks and other settings passed
// through, since TF_CLI_CONFIG_FILE replaces the user's file; the
// providers the cache lacks are installed as the user's
// provider_installation says. WithCLIConfig(file) gives the cache's own
// requests the file's credentials blocks (after TF_TOKEN_<host>
// variables, as in Terraform) and host blocks; a credentials helper is
// left to Terraform. SourcesFrom(file) turns the file's provider_installation
// (mirrors, direct, include and exclude patterns) into the cache's
// sources, for a caller that wants the cache to install the way the user's
// Terraform would.
//
// Guarantees:
//
//   - A cache entry is either absent or complete. A package is downloaded
//     to a temp file, verified (its SHA-256 against a SHA256SUMS document
//     whose OpenPGP signature matches the registry's keys, or against a
//     mirror's hashes), unpacked into a temp dir in the cache's own
//     filesystem, fsynced and renamed into place as
//     DIR/.pluginc/packages/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH
//     (PackagesDir). A process killed at any
//     point leaves only temp files in DIR/.pluginc/tmp, which the next
//     Open or the next installer of that package removes, each only while
//     holding that package's lock (so never a live process's files).
//   - Each package is downloaded at most once per cache directory however
//     many goroutines and processes ask for it at once: callers in one
//     process share one attempt (the first caller installs in its own
//     goroutine; the others wait with their own context, leave as soon as
//     it ends, and take over if the installing caller's context ends
//     first), processes take a per-package flock in DIR/.pluginc/locks
//     (lock files are never deleted), and whoever waited gets the finished
//     package. Version lists are shared the same way.
//   - Nothing unverified enters the cache: every failure (bad checksum,
//     bad signature, truncated body, HTTP error, timeout) is an
//     *InstallError naming the provider, version, platform and URL,
//     wrapping a sentinel from errors.go.
//   - Trust never comes from the bytes on disk alone. Each install writes
//     a record (DIR/.pluginc/records/.../OS_ARCH.json, before the package is
//     renamed into place) of what was verified: the package's h1:, the
//     zh: of its zip as checked against the source, the lock file hashes,
//     every directory's mode, and every file's path, size, mode, SHA-256
//     and stamp (inode, mtime and ctime where the platform has them), as
//     internal/treesum records trees. Every Ensure compares the
//     entry with its record without reading a file. If only stamps differ
//     (a copy, a restore, a touch), the files are hashed under the
//     package's flock and, if names, sizes, modes and SHA-256 all match,
//     the record takes the new stamps. Anything else (a file deleted,
//     added, truncated, replaced (by a symlink too) or chmodded; a record
//     missing, as after a cache restore that skipped hidden files, or
//     unreadable; a record the cache cannot prove it wrote: one without
//     per-file entries, or one, or a package dir, owned by another user
//     or writable by others) gets the entry removed and installed afresh
//     from its source under the flock, never upgraded in place,
//     verified like a first install, and counted in Stats.Repairs (and
//     Stats.Downloads). If that fails, the error wraps ErrDamagedEntry and
//     names the entry and what differed. Ensure never hands out a damaged
//     entry, and once it has seen one the entry is gone, so CLIConfig no
//     longer points Terraform at it. A Package's hashes, and so LockFile,
//     come only from a verified install.
//   - What the SDK's terraform executes is something no plain engine
//     writes. A plain terraform or tofu of the same user given DIR as its
//     plugin cache (plugin_cache_dir, TF_PLUGIN_CACHE_DIR: one cache for
//     everything on a CI agent) unpacks in place into
//     DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH, truncating and rewriting
//     the files there on every init; it never writes below DIR/.pluginc,
//     which it skips as an invalid hostname. The cache's packages, what
//     CLIConfig points Terraform at, are only there, so such an engine
//     keeps working (DIR's top level is its plugin cache, which the cache
//     never reads, writes or hands out) and never breaks a unit, whatever
//     package it installs for the same address and version.
//   - A cache of the previous layout is used, not thrown away. Releases
//     before this one kept packages at DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH
//     and records in DIR/.pluginc/meta. A package missing from the
//     current layout whose old entry has an install record the cache can
//     prove it wrote (the same rules as for any record) is copied, under
//     the package's flock, file by file into new inodes, verified against
//     that record (names, types, sizes, modes, SHA-256, the h1: they make)
//     and placed with a record of its own: no download. An old entry that
//     fails any of that is only logged (Info), never an error, and the
//     package is installed from its source. Old entries and records are
//     never changed or removed: a previous release's process may still
//     run on the same cache during a rolling upgrade, and it keeps
//     working. The lock and temp-file names are the same in both
//     layouts, so the two releases' processes exclude each other per
//     package and sweep each other's leftovers; each release downloads
//     into its own layout, so a package neither had may be downloaded
//     once by each. Once no previous release uses the cache,
//     DIR/.pluginc/meta and the top-level HOST dirs may be removed (the
//     latter only if no plain engine uses DIR as its plugin cache).
//   - Only the effective user (or root) writes the cache. Open refuses a
//     cache root, or a dir above it, that another user owns or that its
//     group or others can write to, as ssh and gpg refuse such dirs (a
//     dir above the root may be sticky and writable by all, as /tmp is;
//     the root never), and every use of an entry checks the root and
//     every dir on the way to the entry and to its record the same way.
//     The refusal is an *UnsafePathError (ErrUnsafePath) naming the
//     path, its owner and its mode, and the option that allows sharing. Dirs and files the cache
//     creates are closed to others whatever the umask. A host that wants
//     to share one cache with a group opts in with WithSharedGroup, which
//     says what the group can then do; in that mode no record is
//     believed and every entry is verified against its source before its
//     first use in a process (Stats.Verifies).
//   - A lock file outweighs every record. A requirement with
//     LockedHashes (a committed .terraform.lock.hcl) is matched against
//     the h1: of the entry's files, hashed by this process, or the zh: of
//     a zip this process downloaded and verified, never against what an
//     install record claims; an entry that matches neither is verified
//     against its source and replaced if it is not the source's package.
//     The Package then has every locked hash, none dropped or replaced,
//     and besides them only hashes this process verified, so LockFile
//     never puts a record's hash where a committed one was.
//   - An install record names its format version; an entry whose record
//     a newer release wrote is neither used nor reinstalled over: Ensure
//     fails with ErrNewerFormat naming the record.
//   - Nothing blocks without a deadline. Every HTTP request attempt runs
//     under a watchdog of the cache's own, so the bounds hold with any
//     client given to WithHTTPClient (even one without timeouts) and a
//     context without a deadline: getting a connection (dial and TLS) is
//     bounded by WithConnectTimeout (default 30s), the wait for response
//     headers once connected by WithHeaderTimeout (60s), and a response
//     body that delivers no byte for WithBodyIdleTimeout (60s) is cut (a
//     slow body that keeps moving never is); an attempt at a small
//     document (discovery, version lists, SHA256SUMS) must end within
//     WithMetadataTimeout (10s, as Terraform's registry client), but for
//     a network mirror's VERSION.json, which a mirror in front of a cache
//     answers only after its own upstream download. Such
//     errors wrap ErrDownload and ErrTimeout and name the URL and the
//     timeout. Connection errors, timeouts, bodies cut short, 429 and 5xx
//     other than 501 are retried (WithRetries, default 4) with exponential
//     backoff from 1s to 30s (WithRetryWait); a Retry-After on a 429 or
//     503 is honoured, and one longer than the backoff maximum fails the
//     request at once, saying how long the server asked for. Other
//     statuses are not retried. The whole request, retries and waits
//     included, is bounded by WithRequestTimeout (2m); only a package
//     body that keeps arriving may outlast it. A request given up on
//     after retries or at that bound is a *RequestError saying how many
//     attempts over how long. Retries are logged (Info) and counted in
//     Stats.Retries. Waiting for
//     another process's package lock is bounded by the caller's context;
//     what the holder does under it is bounded by these same limits.
//   - Credentials stay at their origin, encrypted. A host's token
//     (TF_TOKEN_<host>, a credentials block) goes only over https: to
//     that host's registry API, and to downloads and mirror archives on
//     the same scheme, host and port; an archive URL on plain http, or
//     on another host or port, is fetched without it. The cache's HTTP
//     client (a copy of the one given to WithHTTPClient, which is left
//     as it was) refuses a redirect from https to http (ErrDownload,
//     not retried) and drops the Authorization header on a redirect to
//     another scheme, host or port.
//   - Limits fail loudly: a document (JSON, SHA256SUMS, signature) larger
//     than MaxDocumentSize (8 MiB) is an error naming the URL and the
//     limit, never silently cut; an archive that unpacks to more than
//     WithMaxUnpackedSize (default 2 GiB), or with two entries for one
//     file, is refused with ErrBadPackage naming the archive (and the
//     entry); a failed write (a full disk) is reported as the write error
//     (errors.Is(err, syscall.ENOSPC)), not as a bad download, and is not
//     retried.
//   - Version selection follows Terraform: the newest version satisfying
//     every constraint, pre-releases only when named exactly, a locked
//     version honoured as is and, given the lock file's hashes, a package
//     matching none of them refused (see ParseLockFile and
//     Lock.Requirement). Once a package is in the cache, a locked
//     requirement is answered without any network request; version lists
//     are fetched once per Cache.
//   - CLIConfig and CLIConfigFor never set plugin_cache_dir, and
//     CLIConfigFor drops the user's: Terraform writes into a plugin cache
//     without a lock, unpacking straight into the final path
//     (hashicorp/terraform#31964), so concurrent inits sharing one tear
//     each other's packages. Terraform gets the cache as a read-only
//     filesystem_mirror (PackagesDir) instead and never writes to it.
//   - A CLI config file Terraform would refuse is refused by name:
//     cliconfig's errors (*cliconfig.Error, ErrInvalidCLIConfig) and
//     SourcesFrom's name the file and the line.
//   - One failing source does not fail an install another source can
//     do. A source whose version list fails is logged (Warn, naming it)
//     and the other sources answer; a source whose Fetch fails (a
//     mirror killed mid-download, a package failing its check) is logged
//     (Warn, naming it and the next) and the next source that lists the
//     version is tried, into the same temp file started over, the package
//     verified as for any install. With no other source the error is the
//     failing source's, naming it (its URL). Each package installed past
//     a failed source is told to its Ensure callers through WithFallback
//     (a Fallback naming the failed source, how it failed and the source
//     used; the runner turns it into a warning, an event and a log
//     record), not only to the cache's logger, which discards by
//     default. A network mirror is named by its URL without credentials,
//     query or fragment, and so is every URL in a Fallback's error.
//   - Served to a fleet, the cache stays what it is. MirrorHandler
//     serves only entries Ensure has verified, each packed again into
//     the same bytes every time (regular files in path order, their
//     modes, one fixed time, stored) and checked file by file against
//     its install record (in a shared cache, this process's proof) while
//     it is sent: a file that changed since cuts the response, so a
//     client never gets a byte the cache did not verify. VERSION.json
//     lists the hashes recorded at install (the h1:, which the archive
//     has, and the upstream's zh: of every platform). A miss is filled
//     through Ensure's own path, under the package's flock, so any number
//     of concurrent requests, in this process or in others sharing the
//     cache dir, cause one upstream download. Malformed paths (path
//     traversal included), unknown providers, versions and platforms get
//     a 4xx naming what is wrong, never a panic; with WithMirrorToken a
//     request without the bearer token gets 401, and the token is never
//     logged. TLS is the host's http.Server's.
//   - Every engine's provider addresses. ParseProvider, ParseLockFile and
//     MirrorHandler accept every address some supported engine accepts,
//     a namespace with underscores ("my_org", Terraform 1.16) included,
//     and such a provider is cached, locked and served like any other
//     (DIR/HOST/my_org/TYPE/VERSION/OS_ARCH). A caller that parses a
//     configuration for one engine parses it by that engine's Grammar
//     (DashNamespaces: OpenTofu, Terraform before 1.16;
//     UnderscoreNamespaces: Terraform 1.16), which refuses what the
//     engine refuses, ErrInvalidProvider naming the address; a leading
//     or trailing underscore or dash is refused under every grammar.
//   - Lock file hashes are SCHEME:VALUE in printable ASCII, as Terraform
//     writes them: ParseLockFile refuses anything else by name, and
//     LockFile leaves such strings out, so its output always parses back
//     to the same bytes.
package pluginc
