package workdir

import (
	"os"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testprovider"
)

// childEnv selects a child role (see child_test.go) when the test binary is
// re-executed by a test as a separate process.
const childEnv = "TFISOLATE_WORKDIR_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	testprovider.Cleanup()
	os.Exit(code)
}
