package pluginc

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/format"
)

// Sentinel errors. Every error returned by this package that has one of
// these causes wraps it, so errors.Is works through any layer.
var (
	// ErrInvalidProvider: a provider address that is not host/namespace/type.
	ErrInvalidProvider = errors.New("invalid provider address")
	// ErrInvalidConstraints: version constraints not in Terraform's syntax.
	ErrInvalidConstraints = errors.New("invalid version constraints")
	// ErrInvalidPlatform: a platform that is not OS_ARCH.
	ErrInvalidPlatform = errors.New("invalid platform")
	// ErrNoMatchingVersion: no available version satisfies the constraints.
	ErrNoMatchingVersion = errors.New("no matching version")
	// ErrLockedVersion: the locked version is unusable (bad syntax, outside
	// the constraints, or offered by no source).
	ErrLockedVersion = errors.New("locked version unusable")
	// ErrNotFound: no source offers the provider, version or platform.
	ErrNotFound = errors.New("not found")
	// ErrChecksum: a package does not match its checksum or mirror hashes.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrSignature: the SHA256SUMS document is not signed by the registry's keys.
	ErrSignature = errors.New("signature verification failed")
	// ErrDownload: an HTTP error, a truncated body or a malformed response.
	ErrDownload = errors.New("download failed")
	// ErrTimeout: a request made no progress within one of the cache's
	// timeouts (connect, response headers, body idle, metadata), or ran
	// out of its request timeout. It comes wrapped with ErrDownload, in
	// an error naming the URL and the timeout.
	ErrTimeout = errors.New("timed out")
	// ErrBadPackage: a package archive that cannot be unpacked safely.
	ErrBadPackage = errors.New("bad package archive")
	// ErrDamagedEntry: a cache entry that no longer matches what was
	// verified when it was installed (or lost its install record) and
	// could not be reinstalled from its source. The error names the entry.
	ErrDamagedEntry = errors.New("damaged cache entry")
	// ErrNewerFormat is wrapped by the error about a cache entry whose
	// install record a newer release of the SDK wrote ("written by a
	// newer release: format N; this release reads up to M; upgrade this
	// job"): the entry is neither used nor reinstalled over.
	ErrNewerFormat = format.ErrNewer

	// ErrInvalidLockFile: a dependency lock file that cannot be parsed.
	ErrInvalidLockFile = errors.New("invalid lock file")
	// ErrInvalidCLIConfig: a CLI config file that Terraform would refuse,
	// or a provider_installation the cache cannot follow. It is
	// cliconfig.ErrInvalid, and comes in a *cliconfig.Error naming the
	// file and the line.
	ErrInvalidCLIConfig = cliconfig.ErrInvalid
	// ErrUnsafePath: the cache root, a directory above it or a directory
	// in it that someone other than the effective user or root owns or
	// can write to (see Open and WithSharedGroup). It comes in an
	// *UnsafePathError naming the path, its owner and its mode.
	ErrUnsafePath = errors.New("unsafe cache path")
)

// UnsafePathError is a path the cache refuses to trust: someone other
// than the effective user or root (or, with WithSharedGroup, the shared
// group) owns it or can write to it, so what is in it could be theirs.
// It wraps ErrUnsafePath.
type UnsafePathError struct {
	Path     string
	UID, GID int         // the path's owner and group
	Mode     fs.FileMode // the path's type and permission bits
	Why      string      // what is wrong with it
	Shared   bool        // whether the cache was opened WithSharedGroup
}

// Error names the path, its owner, group and mode, what is wrong and
// what to do about it.
func (e *UnsafePathError) Error() string {
	fix := "make it yours and writable by no one else (chown, chmod go-w), use a private dir " +
		"(such as one under os.UserCacheDir), or share it with a group on purpose with pluginc.WithSharedGroup"
	if e.Shared {
		fix = "make it yours or the shared group's and writable by no one else (chown, chgrp, chmod o-w)"
	}
	return fmt.Sprintf("%s %s (owner uid %d, group gid %d, mode %s): %s; %s", ErrUnsafePath, e.Path, e.UID, e.GID, e.Mode, e.Why, fix)
}

// Unwrap returns ErrUnsafePath.
func (e *UnsafePathError) Unwrap() error { return ErrUnsafePath }

// RequestError is a request the cache gave up on after more than one
// attempt, or because its request timeout (WithRequestTimeout) ran out:
// it says how many attempts were made over how long. It wraps the last
// attempt's error, and ErrTimeout when the request timeout ran out.
type RequestError struct {
	URL      string
	Attempts int
	Elapsed  time.Duration // from the first attempt to giving up
	Timeout  time.Duration // the request timeout that ran out; 0 if it did not
	Err      error         // the last attempt's error
}

// Error is the last attempt's error followed by how many attempts were
// made over how long, and the request timeout if it ran out.
func (e *RequestError) Error() string {
	s := fmt.Sprintf("%v (gave up after %d attempts in %s", e.Err, e.Attempts, e.Elapsed.Round(time.Millisecond))
	if e.Attempts == 1 {
		s = fmt.Sprintf("%v (gave up after 1 attempt in %s", e.Err, e.Elapsed.Round(time.Millisecond))
	}
	if e.Timeout > 0 {
		s += fmt.Sprintf(": the request timeout %s is spent", e.Timeout)
	}
	return s + ")"
}

// Unwrap returns the last attempt's error, and ErrTimeout when the
// request timeout ran out.
func (e *RequestError) Unwrap() []error {
	if e.Timeout > 0 {
		return []error{e.Err, ErrTimeout}
	}
	return []error{e.Err}
}

// InstallError says which package failed to install and from where. It
// wraps the cause (one of the sentinels above, or a context error).
type InstallError struct {
	Provider Provider
	Version  string
	Platform string
	URL      string // the URL or path the failing step used; may be empty
	Err      error
}

// Error names the package, the URL and the cause.
func (e *InstallError) Error() string {
	s := fmt.Sprintf("install provider %s %s for %s", e.Provider, e.Version, e.Platform)
	if e.URL != "" {
		s += " from " + e.URL
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *InstallError) Unwrap() error { return e.Err }
