package store

import (
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// TestMain runs a child role (child_test.go) when a test re-executed the
// binary as a second process, and the tests otherwise.
func TestMain(m *testing.M) { childproc.Main(m, child) }
