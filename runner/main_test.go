package runner

import (
	"os"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testprovider"
)

// childEnv names the child-process role when the test binary re-executes
// itself to act as a second OS process.
const childEnv = "TFISOLATE_RUNNER_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	testprovider.Cleanup()
	os.Exit(code)
}
