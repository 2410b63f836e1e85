package pluginc

import (
	"context"
	"os"

	"github.com/hashicorp/go-version"
)

// Source is a place providers are installed from: Registry, NetworkMirror
// or FilesystemMirror. Sources are tried in the order given to WithSource,
// like the methods of Terraform's provider_installation block: a version is
// installed from the first source that lists it.
type Source interface {
	// String describes the source in errors and logs.
	String() string

	// versions lists the versions of p the source offers.
	versions(ctx context.Context, env *fetchEnv, p Provider) ([]*version.Version, error)

	// fetch writes the package zip of p at v for platform into dst and
	// verifies it. It returns the hashes the package contributes to a lock
	// file besides its own h1: (the zh: hashes of a signed SHA256SUMS) and
	// hashes that the unpacked package's h1: must match, if any.
	fetch(ctx context.Context, env *fetchEnv, p Provider, v *version.Version, platform string, dst *os.File) (fetched, error)
}

// fetched is what a source learned while fetching a package.
type fetched struct {
	url       string   // where the zip came from
	lockExtra []string // extra lock file hashes (zh: of every platform)
	wantH1    []string // h1: hashes the package must match (mirrors)
	bytes     int64    // bytes transferred
	sha256    string   // hex SHA-256 of the zip; empty for one packed from an unpacked mirror
}
