package runner

// The engine messages the runner acts on, produced by each real engine of
// the matrix and run through the runner's own matchers: an engine
// release that rewords one of them fails here by name, not in a user's
// run.

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestEngineMessages runs each engine of the matrix by hand into the
// situations whose messages the runner matches, and requires the
// runner's matcher to recognize each:
//
//   - a module not installed: needsInit (init runs, then the command again);
//   - a backend changed since init: backendChanged and needsInit (refused
//     unless the unit says migrate or reconfigure);
//   - an http backend answering 503 until the engine gives up: a transient
//     error under DefaultRetry;
//   - a saved plan applied after its state moved on: staleSavedPlan.
func TestEngineMessages(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		cli := filepath.Join(t.TempDir(), "empty.tfrc")
		require.NoError(t, os.WriteFile(cli, nil, 0o644))
		env := append(testenv.TerraformEnv(cli), "TF_IN_AUTOMATION=1")
		run := func(dir string, args ...string) (string, error) {
			return runEngine(testCtx(t), e.Path, dir, env, append(args, "-no-color")...)
		}
		mustRun := func(t *testing.T, dir string, args ...string) {
			t.Helper()
			out, err := run(dir, args...)
			require.NoError(t, err, "%s %s:\n%s", e.Name, strings.Join(args, " "), out)
		}

		t.Run("module not installed", func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"main.tf":   `module "m" { source = "./m" }`,
				"m/main.tf": `output "x" { value = 1 }`,
			})
			out, err := run(dir, "plan", "-input=false")
			require.Error(t, err, out)
			require.True(t, needsInit(engineErr(out)), "%s said:\n%s", e.Name, out)
		})

		t.Run("backend changed", func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"main.tf":    `resource "terraform_data" "x" {}`,
				"backend.tf": "terraform {\n  backend \"local\" {\n    path = \"a.tfstate\"\n  }\n}\n",
			})
			mustRun(t, dir, "init", "-input=false")
			writeTree(t, dir, map[string]string{"backend.tf": "terraform {\n  backend \"local\" {\n    path = \"b.tfstate\"\n  }\n}\n"})
			out, err := run(dir, "plan", "-input=false")
			require.Error(t, err, out)
			require.True(t, backendChanged(engineErr(out)), "%s said:\n%s", e.Name, out)
			require.True(t, needsInit(engineErr(out)), "%s said:\n%s", e.Name, out)
		})

		t.Run("backend unavailable", func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "state store is down", http.StatusServiceUnavailable)
			}))
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{
				"main.tf": `resource "terraform_data" "x" {}
terraform {
  backend "http" {
    address        = "` + srv.URL + `/state"
    retry_max      = 1
    retry_wait_min = 0
    retry_wait_max = 0
  }
}`,
			})
			out, err := run(dir, "init", "-input=false")
			require.Error(t, err, out)
			require.True(t, DefaultRetry.policy().Transient(engineErr(out)), "%s said:\n%s", e.Name, out)
		})

		t.Run("stale saved plan", func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"main.tf": `resource "terraform_data" "x" { input = "a" }`})
			mustRun(t, dir, "init", "-input=false")
			mustRun(t, dir, "plan", "-input=false", "-out=first.tfplan")
			mustRun(t, dir, "apply", "-input=false", "-auto-approve")
			out, err := run(dir, "apply", "-input=false", "first.tfplan")
			require.Error(t, err, out)
			require.Contains(t, out, staleSavedPlan, "%s said:\n%s", e.Name, out)
		})
	})
}

// engineErr is what the runner's matchers see of a failed command: its
// output as the error's text.
type engineErr string

func (e engineErr) Error() string { return string(e) }
