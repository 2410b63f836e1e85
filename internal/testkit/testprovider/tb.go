package testprovider

// TB is the part of testing.TB the test helpers here use; any *testing.T
// or *testing.B is one. It is declared here, not taken from package
// testing, so that programs using only BuildTo and PackageZip (the
// examples and bench/, through internal/harness/demo) do not link package testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
}
