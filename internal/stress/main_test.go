package stress

import (
	"os"
	"sync"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testprovider"
)

// childEnv, when set, makes the test binary act as a runner process (see
// runChild) instead of running tests.
const childEnv = "TFISOLATE_STRESS_CHILD"

// The demo provider is built once per test binary, into buildDir.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(soakHostEnv) != "" {
		os.Exit(runSoakHost())
	}
	code := m.Run()
	testprovider.Cleanup()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
