package pluginc

import (
	"context"
	"os"
)

// Source is a place providers are installed from. Registry,
// NetworkMirror and FilesystemMirror are the built-in ones; a caller may
// bring its own (a host's artifact store, a directory of packages it
// builds), as in the package's Source example. Sources are tried in the
// order given to WithSource, like the methods of Terraform's
// provider_installation block: a version is installed from the first
// source that lists it, or, when that source's Fetch fails, from the next
// one that lists it.
//
// The cache trusts a Source for what it vouches: a package it fetches is
// unpacked, hashed (h1:) and recorded by the cache, but whether those are
// the right bytes is the source's to check (the registry checks a signed
// SHA256SUMS, a network mirror its hashes). A Source must be safe for
// concurrent use.
type Source interface {
	// String describes the source in errors and logs.
	String() string

	// Versions lists the versions of p the source offers, as the source
	// spells them ("1.2.0"). Versions that are not semantic versions of
	// three parts are ignored. A provider the source does not know is an
	// empty list, or an error wrapping ErrNotFound.
	Versions(ctx context.Context, p Provider) ([]string, error)

	// Fetch writes the zip of the package id names into dst, an empty
	// temp file of the cache, and checks it against what the source
	// knows of it. An error wrapping ErrNotFound says the source has no
	// such package; any other error fails the install. Fetch may start
	// dst over (truncate it) as often as it needs to.
	Fetch(ctx context.Context, id PackageID, dst *os.File) (Fetched, error)
}

// PackageID names one provider package: a provider at a version, for a
// platform.
type PackageID struct {
	Provider Provider
	Version  string // as the source lists it, such as "1.2.0"
	Platform string // OS_ARCH, such as "linux_amd64"
}

// String returns HOST/NAMESPACE/TYPE VERSION OS_ARCH.
func (id PackageID) String() string {
	return id.Provider.String() + " " + id.Version + " " + id.Platform
}

// Fetched is what a Source learned while fetching a package.
type Fetched struct {
	// URL says where the zip came from (a URL, a path), for errors and
	// logs; it is set on failure too when known.
	URL string
	// Bytes is how many bytes were transferred.
	Bytes int64
	// SHA256 is the hex SHA-256 of the zip written to dst, computed while
	// writing it. Empty for a zip the source packed itself (from an
	// unpacked package): such a package has no zh: hash of its own, and
	// the lock file records its h1: alone.
	SHA256 string
	// LockHashes are hashes the source vouches for besides the package's
	// own h1:, for lock files: the zh: of every platform's zip from a
	// signed SHA256SUMS. A source that cannot vouch leaves it empty.
	LockHashes []string
}
