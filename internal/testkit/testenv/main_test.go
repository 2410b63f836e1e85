package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestMain runs a child role when a test re-executed the binary as a
// second process, and the tests otherwise.
func TestMain(m *testing.M) { childproc.Main(m, child) }

// buildDirEnv names the dir a "build-tofu" child builds into.
const buildDirEnv = "TESTENV_CHILD_BUILD_TOFU_DIR"

// child is the body of a re-executed test binary: "build-tofu" builds
// OpenTofu into the dir buildDirEnv names and says "building in TMP" once
// `go build` runs, so TestBuildTofuKilled can kill it mid-build.
func child(role string) error {
	switch role {
	case "build-tofu":
		dir := os.Getenv(buildDirEnv)
		if dir == "" {
			return errors.New(buildDirEnv + " is not set")
		}
		_, err := testenv.BuildTofu(context.Background(), dir, func(tmp string) {
			fmt.Printf("building in %s\n", tmp)
		})
		return err
	}
	return fmt.Errorf("unknown role %q", role)
}
