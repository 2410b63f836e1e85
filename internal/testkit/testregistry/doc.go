// Package testregistry is a loopback HTTPS server speaking the provider
// registry protocol (service discovery, versions, download metadata, a
// SHA256SUMS document with a detached OpenPGP signature), the provider
// network mirror protocol and the module registry protocol (versions, a
// download answer pointing at a tar.gz or zip archive the server serves;
// AddModule publishes a version at any time), for tests and examples that
// must install providers and modules without the internet.
//
// The server presents a certificate for its host name (DefaultHost unless
// WithHost says otherwise) issued by a CA generated at start; HTTPClient
// trusts that CA and dials the loopback listener for that host, and
// WriteCAFile lets other processes (including terraform via SSL_CERT_FILE)
// trust it too. Terraform reaches the module API under the registry's
// host name through the CLI configuration's host block ModuleServices
// returns. Downloads can be throttled, counted, held mid-body by a
// Gate and broken on purpose with a Fault, so tests of caches can observe
// exactly-once downloads and crash safety deterministically. For tests of
// where credentials go, PlainHTTP serves the same routes over plain HTTP
// on the host's port 80 (as HTTPClient dials it), SetArchiveBase makes
// download documents point there, RedirectDownloads redirects downloads
// there, and AuthorizedRequests lists every request that carried an
// Authorization header, with its scheme.
//
// New does not need a testing.TB, so examples can use it; Start is the
// test-friendly wrapper that fails the test on error and closes the server
// at cleanup. The package does not import testing (Start takes the small
// TB interface), so a program that serves a registry does not link it.
package testregistry
