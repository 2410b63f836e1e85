package runner

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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

// onceThen fails the first run with msg on stderr and succeeds afterwards;
// the message is not in the command line, so only the output can match.
func onceThen(msg string) string {
	return "if [ -e \"$1\" ]; then exit 0; fi\n: > \"$1\"\necho '" + msg + "' >&2\nexit 1\n"
}

func TestRetry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "flaky", flakyComponent)
	tests := []struct {
		name     string
		script   string
		patterns []*regexp.Regexp
		retries  int
		status   Status
	}{
		{"transient error is retried", onceThen("Error: 429 Too Many Requests"), nil, 1, Succeeded},
		{"permanent error is not", "echo 'Error: permission denied' >&2\nexit 1\n", nil, 0, Failed},
		{"caller pattern is retried", onceThen("Error: quota bucket empty, come back later"), []*regexp.Regexp{regexp.MustCompile(`quota bucket empty`)}, 1, Succeeded},
		{"caller error without its pattern is not", onceThen("Error: quota bucket empty, come back later"), nil, 0, Failed},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "marker")
			state := filepath.Join(t.TempDir(), "flaky.tfstate")
			gen := files(t, map[string]any{"marker": marker}, state)
			gen["flaky.sh"] = []byte(tt.script)
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", "flaky-"+string(rune('a'+i)), src, gen)}
			rec := &recorder{}
			r := w.runner(t, WithEvents(rec.add), WithRetry(RetryPolicy{Max: 2, Backoff: time.Millisecond, Patterns: tt.patterns}))
			rep, err := r.Run(testCtx(t), Apply, u)
			res := rep.Results[0]
			require.Equal(t, tt.status, res.Status, "%v", res.Err)
			require.Equal(t, tt.retries, res.Retries)
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
			require.Equal(t, Running, e.Status)
			require.ErrorContains(t, e.Err, map[bool]string{true: "429 Too Many Requests", false: "quota bucket empty"}[tt.patterns == nil])
			require.Contains(t, log, "transient error, retry 1 of 2")
			require.Contains(t, stateResources(t, state), "terraform_data.flaky")
		})
	}
}
