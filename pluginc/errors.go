package pluginc

import (
	"errors"
	"fmt"
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
	// timeouts (connect, response headers, body idle). It comes wrapped
	// with ErrDownload, in an error naming the URL and the timeout.
	ErrTimeout = errors.New("timed out")
	// ErrBadPackage: a package archive that cannot be unpacked safely.
	ErrBadPackage = errors.New("bad package archive")
	// ErrDamagedEntry: a cache entry that no longer matches what was
	// verified when it was installed (or lost its install record) and
	// could not be reinstalled from its source. The error names the entry.
	ErrDamagedEntry = errors.New("damaged cache entry")
	// ErrInvalidLockFile: a dependency lock file that cannot be parsed.
	ErrInvalidLockFile = errors.New("invalid lock file")
	// ErrInvalidCLIConfig: a CLI config file that Terraform would refuse,
	// or a provider_installation the cache cannot follow. It comes in a
	// *CLIConfigError naming the file and the line.
	ErrInvalidCLIConfig = errors.New("invalid CLI config")
)

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

// CLIConfigError says which CLI config file, and which line of it, a
// problem is in (Line is 0 when it cannot be told). It wraps
// ErrInvalidCLIConfig.
type CLIConfigError struct {
	Path string
	Line int
	Msg  string
}

// Error names the file, the line and the problem.
func (e *CLIConfigError) Error() string {
	if e.Path == "" { // a CLIConfigFile built in code
		return fmt.Sprintf("%s: %s", ErrInvalidCLIConfig, e.Msg)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s %s, line %d: %s", ErrInvalidCLIConfig, e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s %s: %s", ErrInvalidCLIConfig, e.Path, e.Msg)
}

// Unwrap returns ErrInvalidCLIConfig.
func (e *CLIConfigError) Unwrap() error { return ErrInvalidCLIConfig }
