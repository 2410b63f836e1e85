package testbackend

import (
	"flag"
	"fmt"
	"regexp"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// TestMain runs a child role when a test re-executed the binary as a
// second process, and the tests otherwise.
func TestMain(m *testing.M) { childproc.Main(m, child(m)) }

// child is the body of a re-executed test binary. A role is the name of
// the one test the child runs: what the parent checks is what a test of
// another process sees, the cleanups of its *testing.T included.
func child(m *testing.M) func(role string) error {
	return func(role string) error {
		switch role {
		case "TestPostgresChild":
			return runTest(m, role)
		}
		return fmt.Errorf("unknown role %q", role)
	}
}

// runTest runs the test named name alone and verbosely, as `go test -run
// '^name$' -v` would, and fails unless it passes. childproc starts the
// child with -test.run=^$, so the flags are parsed first and then set.
func runTest(m *testing.M, name string) error {
	flag.Parse()
	if err := flag.Set("test.run", "^"+regexp.QuoteMeta(name)+"$"); err != nil {
		return err
	}
	if err := flag.Set("test.v", "true"); err != nil {
		return err
	}
	if code := m.Run(); code != 0 {
		return fmt.Errorf("%s failed (exit status %d)", name, code)
	}
	return nil
}
