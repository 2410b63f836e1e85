package testenv

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tfisolate/tfisolate/internal/engine"
)

var (
	tfOnce sync.Once
	tfPath string
	tfErr  error
)

// Terraform returns the path of a terraform binary. When none can be found
// the test is skipped with a clear message, except under CI=true, where a
// missing terraform fails the run.
func Terraform(tb testing.TB) string {
	tb.Helper()
	tfOnce.Do(func() {
		dir := ""
		if c, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(c, "tfisolate", "terraform")
		}
		tfPath, tfErr = engine.Find(context.Background(), engine.Terraform, dir)
	})
	if tfErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("terraform is required under CI=true: %v", tfErr)
		}
		tb.Skipf("skipping: terraform is not available (%v); put terraform on PATH to run this test", tfErr)
	}
	return tfPath
}

// TerraformEnv returns a base environment for running terraform in tests:
// the process environment minus anything that would point terraform at the
// user's own configuration, plus the given CLI config file and settings that
// keep it offline and quiet. OpenTofu reads the same TF_ variables, so the
// environment serves tofu as well.
func TerraformEnv(cliConfig string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case hasPrefix(kv, "TF_CLI_CONFIG_FILE="), hasPrefix(kv, "TF_PLUGIN_CACHE_DIR="),
			hasPrefix(kv, "TF_DATA_DIR="), hasPrefix(kv, "TF_WORKSPACE="), hasPrefix(kv, "TF_LOG"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TF_CLI_CONFIG_FILE="+cliConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
