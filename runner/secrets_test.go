package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// secret is what the test looks for in everything a Run writes.
const secret = "s3cr3t-VALUE-42"

const secretComponent = `
variable "secret" {
  type      = string
  sensitive = true
}
resource "terraform_data" "s" { input = var.secret }
output "secret" {
  value     = var.secret
  sensitive = true
}
output "plain" { value = "visible" }
`

// TestSecretsNeverInLogs runs every command over a unit with a sensitive
// variable and output, and a custom step that reads the whole state with
// terraform-exec's Show: the secret reaches no unit log, not the output
// stream, no event and not the JSON report. The step gets the state it
// asked for; the plan files that hold the secret are 0600.
func TestSecretsNeverInLogs(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "secret", secretComponent)
	logDir := filepath.Join(w.dir, "logs")
	out := &syncBuffer{}
	var mu sync.Mutex
	var events []string
	r := w.runner(t, WithOutput(out), WithLogDir(logDir), WithEvents(func(e Event) {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		mu.Lock()
		events = append(events, string(b))
		mu.Unlock()
	}))
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "secret", src, nil), Args: Args{VarFiles: []string{"secret.tfvars.json"}}}
	u.Workdir.Files = map[string][]byte{"secret.tfvars.json": []byte(`{"secret":"` + secret + `"}`)}
	var shown bool
	show := Step("show", func(ctx context.Context, h *Handle) error {
		st, err := h.Terraform.Show(ctx)
		if err != nil {
			return err
		}
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		shown = strings.Contains(string(b), secret)
		h.Record(len(st.Values.RootModule.Resources))
		return nil
	})
	var reports []string
	for _, c := range []Command{Init, Plan, SavePlan, ApplyPlan, Apply, Output, show, Destroy} {
		rep, err := r.Run(testCtx(t), c, u)
		require.NoError(t, err, "%s", c)
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		reports = append(reports, string(b))
		if c.String() == SavePlan.String() {
			for _, f := range []string{rep.Results[0].Plan.File, rep.Results[0].Plan.JSONFile} {
				fi, err := os.Stat(f)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
			}
		}
		if c.String() == Output.String() {
			require.JSONEq(t, `"`+secret+`"`, string(rep.Results[0].Outputs["secret"].Value), "the caller asked for it")
		}
	}
	require.True(t, shown, "the step's Show returned the state, secret included")

	require.NotContains(t, out.String(), secret, "output stream")
	require.NotEmpty(t, out.String())
	mu.Lock()
	require.NotContains(t, strings.Join(events, "\n"), secret, "events")
	mu.Unlock()
	require.NotContains(t, strings.Join(reports, "\n"), secret, "JSON reports")
	logs := 0
	for _, root := range []string{logDir, filepath.Join(w.dir, "workdirs")} {
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
				return err
			}
			logs++
			require.NotContains(t, readFile(t, p), secret, p)
			return nil
		}))
	}
	require.NotZero(t, logs)
}
