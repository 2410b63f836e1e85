package store

import (
	"os"
	"testing"
)

// childEnv selects a child role (see child_test.go) when the test binary
// is re-executed by a test as a separate process.
const childEnv = "TFISOLATE_STORE_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}
