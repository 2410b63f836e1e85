package runner

import (
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flakyApplyBody is a fake terraform whose first apply fails with $MSG as
// an error diagnostic, after reporting a resource operation when
// $STARTED is set; later applies succeed. $COUNT counts the applies.
const flakyApplyBody = `
case "$1" in
init|workspace) exit 0;;
apply)
  n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"
  if [ "$n" -le 1 ]; then
    [ -n "$STARTED" ] && echo '{"type":"apply_start","@message":"x.y: Creating..."}'
    echo "{\"type\":\"diagnostic\",\"diagnostic\":{\"severity\":\"error\",\"summary\":\"$MSG\"}}"
    exit 1
  fi
  echo '{"type":"outputs","outputs":{}}'; exit 0;;
esac
echo "unexpected: $*" >&2; exit 1
`

// TestRetry checks which failed applies the runner repeats: a transient
// error (or one matching the caller's patterns) before terraform started
// any change; never one after it started a change or failed to save the
// state, however transient it looks.
func TestRetry(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "flaky", `output "x" { value = 1 }`)
	tf, _ := fakeTerraform(t, flakyApplyBody)
	quota := []*regexp.Regexp{regexp.MustCompile(`quota bucket empty`)}
	tests := []struct {
		name     string
		msg      string
		started  bool
		patterns []*regexp.Regexp
		retries  int
		status   Status
	}{
		{"transient error before any change is retried", "429 Too Many Requests", false, nil, 1, Succeeded},
		{"transient error after a change started is not", "429 Too Many Requests", true, nil, 0, Failed},
		{"a state that could not be saved is not", "Failed to save state: connection reset by peer", false, nil, 0, Failed},
		{"permanent error is not", "permission denied", false, nil, 0, Failed},
		{"caller pattern is retried", "quota bucket empty, come back later", false, quota, 1, Succeeded},
		{"caller pattern after a change started is not", "quota bucket empty, come back later", true, quota, 0, Failed},
		{"caller error without its pattern is not", "quota bucket empty, come back later", false, nil, 0, Failed},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"MSG": tt.msg, "COUNT": filepath.Join(t.TempDir(), "count")}
			if tt.started {
				env["STARTED"] = "1"
			}
			u := Unit{Env: env, Workdir: workdirSpec("plat-ue2-dev", "flaky-"+string(rune('a'+i)), src, nil)}
			rec := &recorder{}
			r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithEvents(rec.add),
				WithRetry(RetryPolicy{Max: 2, Backoff: time.Millisecond, Patterns: tt.patterns}))
			require.NoError(t, err)
			rep, err := r.Run(testCtx(t), Apply, u)
			res := rep.Results[0]
			require.Equal(t, tt.status, res.Status, "%v", res.Err)
			require.Equal(t, tt.retries, res.Retries)
			require.Equal(t, strconv.Itoa(tt.retries+1), strings.TrimSpace(readFile(t, env["COUNT"])), "applies run")
			var retries []Event
			rec.mu.Lock()
			for _, e := range rec.events {
				if e.Retry > 0 {
					retries = append(retries, e)
				}
			}
			rec.mu.Unlock()
			require.Len(t, retries, tt.retries)
			log := readFile(t, res.Log)
			if tt.retries == 0 {
				require.Error(t, err)
				require.NotContains(t, log, "transient error")
				return
			}
			require.NoError(t, err)
			e := retries[0]
			require.Equal(t, 1, e.Retry)
			require.Equal(t, PhaseApply, e.Phase)
			require.ErrorContains(t, e.Err, tt.msg)
			require.Contains(t, log, "transient error, retry 1 of 2")
		})
	}
}

// TestDefaultTransientErrors: the messages of real transient failures
// match, the pg backend's init race among them (as seen in CI), and
// near misses that name a user's own relation or a permanent failure do
// not.
func TestDefaultTransientErrors(t *testing.T) {
	var p RetryPolicy
	for msg, want := range map[string]bool{
		`Error: pq: relation "global_states_id_seq" already exists`:                              true,
		`Error: pq: relation "states_by_name" already exists`:                                    true,
		`pq: duplicate key value violates unique constraint "pg_type_typname_nsp_index"`:         true,
		`Error: pq: duplicate key value violates unique constraint "pg_namespace_nspname_index"`: true,
		`Error: Error creating table: pq: relation "orders" already exists`:                      false,
		`Error: 503 Service Unavailable`:                                                         true,
		`Error: read tcp 127.0.0.1:5432: connection reset by peer`:                               true,
		`Error: pq: password authentication failed for user "tf"`:                                false,
		`Error: Unsupported argument`:                                                            false,
	} {
		require.Equal(t, want, p.policy().Transient(errors.New(msg)), "%s", msg)
	}
}

// flakyComponent runs flaky.sh (a generated file) in a provisioner with
// a marker path, so a script can fail the first time only.
const flakyComponent = `
variable "marker" { type = string }
resource "terraform_data" "flaky" {
  provisioner "local-exec" {
    command = "sh ${path.module}/flaky.sh ${var.marker}"
  }
}
`

// TestRetryNotAfterProvisioner: with real terraform, a provisioner that
// fails with a throttling message while its resource is being created is
// not retried: the resource exists (tainted) in the state, and terraform,
// not the runner, decides what the next apply does with it.
func TestRetryNotAfterProvisioner(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "flaky", flakyComponent)
	marker := filepath.Join(t.TempDir(), "marker")
	state := filepath.Join(t.TempDir(), "flaky.tfstate")
	gen := files(t, map[string]any{"marker": marker}, state)
	gen["flaky.sh"] = []byte("if [ -e \"$1\" ]; then exit 0; fi\n: > \"$1\"\necho 'Error: 429 Too Many Requests' >&2\nexit 1\n")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "flaky", src, gen)}
	r := w.runner(t, WithRetry(RetryPolicy{Max: 2, Backoff: time.Millisecond}))
	rep, err := r.Run(testCtx(t), Apply, u)
	require.ErrorContains(t, err, "429 Too Many Requests")
	require.Zero(t, rep.Results[0].Retries)
	require.Contains(t, readFile(t, state), `"status": "tainted"`, "created once, tainted by its provisioner")
}
