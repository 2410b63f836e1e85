package stress

import (
	"os"
	"sync"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// The demo provider is built once per test binary, into buildDir.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TestMain runs a child role (child_test.go) when a test re-executed the
// binary as a second process, and the tests otherwise.
func TestMain(m *testing.M) {
	childproc.Main(m, child, testprovider.Cleanup, func() {
		if buildDir != "" {
			_ = os.RemoveAll(buildDir)
		}
	})
}
