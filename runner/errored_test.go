package runner

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testbackend"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// createsComponent records every create of its one resource in a file
// outside the workdir, so a test can count how often the infrastructure
// was really created.
const createsComponent = `
variable "creations" { type = string }
resource "terraform_data" "a" {
  provisioner "local-exec" {
    command = "echo created >> ${var.creations}"
  }
}
output "id" { value = terraform_data.a.id }
`

// httpBackendNoClientRetry is srv.BackendJSON(name) with the http
// backend's own retries down to one after a second (0 would mean its
// default, 2), so a request cut twice fails terraform.
func httpBackendNoClientRetry(t *testing.T, srv *testbackend.HTTPState, name string) []byte {
	t.Helper()
	var doc map[string]map[string]map[string]map[string]any
	require.NoError(t, json.Unmarshal(srv.BackendJSON(name), &doc))
	doc["terraform"]["backend"]["http"]["retry_max"] = 1
	doc["terraform"]["backend"]["http"]["retry_wait_min"] = 1
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}

// createsWorld is one instance of createsComponent whose state lives in
// an http state server, with a runner whose retry policy would retry
// transient errors at once.
type createsWorld struct {
	srv       *testbackend.HTTPState
	unit      Unit
	r         *Runner
	creations string // the file each create of the resource adds a line to
}

// createsState names the instance's state in the server.
const createsState = "plat-ue2-dev-creates"

func newCreatesWorld(t *testing.T, tf string) createsWorld {
	t.Helper()
	c := createsWorld{srv: testbackend.StartHTTPState(t)}
	dir := t.TempDir()
	wd, err := workdir.New(filepath.Join(dir, "workdirs"))
	require.NoError(t, err)
	src := filepath.Join(dir, "src", "creates")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(createsComponent), 0o644))
	c.creations = filepath.Join(dir, "creations")
	vars, err := json.Marshal(map[string]any{"creations": c.creations})
	require.NoError(t, err)
	c.unit = Unit{Workdir: workdirSpec("plat-ue2-dev", "creates", src, map[string][]byte{
		"backend.tf.json": httpBackendNoClientRetry(t, c.srv, createsState), "terraform.tfvars.json": vars})}
	c.r, err = New(WithWorkdirs(wd), WithTerraform(tf), WithRetry(RetryPolicy{Max: 2, Backoff: time.Millisecond}))
	require.NoError(t, err)
	return c
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// TestApplyNeverRepeatedAfterStateWriteFails cuts every state write of an
// http backend during an apply, under both engines, with a retry policy
// that would retry "connection reset by peer". The resource is created
// once; the apply is not retried; the unit fails with ErrStateNotSaved
// naming the errored state, kept 0600 in the instance's data dir; the
// next Apply, after a refresh of the workdir, is refused without running
// terraform; PushErroredState pushes it, and the Apply after that creates
// nothing.
func TestApplyNeverRepeatedAfterStateWriteFails(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		c := newCreatesWorld(t, e.Path)
		srv, u, r, creations, name := c.srv, c.unit, c.r, c.creations, createsState
		var err error

		// Init first, so the cut meets the apply's own state write.
		_, err = r.Run(testCtx(t), Init, u)
		require.NoError(t, err)
		srv.Fail(name, "POST", 100, 0)
		rep, err := r.Run(testCtx(t), Apply, u)
		require.ErrorIs(t, err, ErrStateNotSaved)
		res := rep.Results[0]
		require.Equal(t, Failed, res.Status)
		require.Zero(t, res.Retries, "an apply that changed infrastructure is never repeated")
		require.Equal(t, 1, countLines(t, creations), "created once")
		require.NotZero(t, srv.Counters(name).Faults)
		_, saved := srv.State(name)
		require.False(t, saved, "the backend never got the state")
		var se *StateNotSavedError
		require.ErrorAs(t, res.Err, &se)
		require.False(t, se.Earlier)
		fi, err := os.Stat(se.File)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "it holds secrets as terraform renders them")
		require.Contains(t, string(readFileBytes(t, se.File)), "terraform_data")
		require.Contains(t, res.Err.Error(), "state push")
		require.Contains(t, res.Err.Error(), se.File)

		// The next Apply (the component changed, so the workdir is
		// refreshed) is refused before terraform runs.
		srv.Fail(name, "POST", 0, 0)
		require.NoError(t, os.WriteFile(filepath.Join(u.Workdir.Source, "extra.tf"), []byte("# refreshed\n"), 0o644))
		gets := srv.Counters(name).Gets
		rep, err = r.Run(testCtx(t), Apply, u)
		require.ErrorIs(t, err, ErrStateNotSaved)
		var again *StateNotSavedError
		require.ErrorAs(t, rep.Results[0].Err, &again)
		require.True(t, again.Earlier)
		require.Equal(t, se.File, again.File, "the errored state survived the refresh")
		require.Equal(t, gets, srv.Counters(name).Gets, "terraform did not run")
		for _, c := range []Command{Plan, Destroy, Output} {
			_, err := r.Run(testCtx(t), c, u)
			require.ErrorIs(t, err, ErrStateNotSaved, "%s", c)
		}

		// Pushed, the instance runs again, and nothing is created twice.
		_, err = r.Run(testCtx(t), PushErroredState, u)
		require.NoError(t, err)
		_, saved = srv.State(name)
		require.True(t, saved)
		require.NoFileExists(t, se.File)
		rep, err = r.Run(testCtx(t), Apply, u)
		require.NoError(t, err)
		require.NotEmpty(t, rep.Results[0].Outputs["id"].Value)
		require.Equal(t, 1, countLines(t, creations), "the pushed state knows the resource")
	})
}

// TestApplyRetriedBeforeAnyChange fails the http backend's state reads
// of an apply's first attempt with 503 (twice: the backend's own retry
// meets it too): terraform changed nothing yet, so the runner retries
// the apply, and the resource is created once.
func TestApplyRetriedBeforeAnyChange(t *testing.T) {
	c := newCreatesWorld(t, testenv.Terraform(t))
	srv, u, r, creations, name := c.srv, c.unit, c.r, c.creations, createsState
	_, err := r.Run(testCtx(t), Init, u)
	require.NoError(t, err)

	srv.Fail(name, "GET", 2, http.StatusServiceUnavailable)
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.Equal(t, 2, srv.Counters(name).Faults)
	require.Equal(t, 1, rep.Results[0].Retries)
	require.Equal(t, 1, countLines(t, creations))
}

func readFileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
