package pluginc

import (
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestMain runs a child role when a test re-executed the binary as a
// second process (the fleet mirror's roles in mirror_server_process_test.go,
// the others in process_test.go), and the tests otherwise.
func TestMain(m *testing.M) {
	childproc.Main(m, func(role string) error {
		if role == roleMirror || role == roleRunner {
			return fleetChild(role)
		}
		return child(role)
	}, testprovider.Cleanup)
}
