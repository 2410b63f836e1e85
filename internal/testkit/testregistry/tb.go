package testregistry

// TB is the part of testing.TB Start and MustAdd use; any *testing.T or
// *testing.B is one. It is declared here, not taken from package testing,
// so that programs using only New (the examples and bench/, through
// internal/harness/demo) do not link package testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}
