// Package testregistry is a loopback HTTPS server speaking the provider
// registry protocol (service discovery, versions, download metadata, a
// SHA256SUMS document with a detached OpenPGP signature) and the provider
// network mirror protocol, for tests and examples that must install
// providers without the internet.
//
// The server presents a certificate for its host name (DefaultHost unless
// WithHost says otherwise) issued by a CA generated at start; HTTPClient
// trusts that CA and dials the loopback listener for that host, and
// WriteCAFile lets other processes (including terraform via SSL_CERT_FILE)
// trust it too. Downloads can be throttled, counted, held mid-body by a
// Gate and broken on purpose with a Fault, so tests of caches can observe
// exactly-once downloads and crash safety deterministically.
//
// New does not need a testing.TB, so examples can use it; Start is the
// test-friendly wrapper that fails the test on error and closes the server
// at cleanup.
package testregistry
