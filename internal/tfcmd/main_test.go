package tfcmd

import (
	"fmt"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// children are the roles a test can re-execute this binary as; each
// platform's test files add theirs.
var children = map[string]func() error{}

// TestMain runs a child role when a test re-executed the binary as a
// second process, and the tests otherwise.
func TestMain(m *testing.M) {
	childproc.Main(m, func(role string) error {
		f, ok := children[role]
		if !ok {
			return fmt.Errorf("unknown role %q", role)
		}
		return f()
	})
}
