package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

const varComponent = `
variable "x" { type = string }
output "x" { value = var.x }
`

// plainTerraformOutput applies dir with plain terraform in the test's
// environment and returns output x, as a shell user would get it.
func plainTerraformOutput(t *testing.T, tf, dir string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cfg, nil, 0o644))
	env := append(testenv.TerraformEnv(cfg), "TF_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
	for _, args := range [][]string{{"init", "-input=false"}, {"apply", "-auto-approve", "-input=false"}} {
		cmd := exec.Command(tf, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cmd := exec.Command(tf, "output", "-raw", "x")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// TestTFVarPrecedence: TF_VAR_* from the environment reaches terraform,
// and a value in terraform.tfvars or an auto.tfvars file wins over it,
// exactly as plain terraform decides.
func TestTFVarPrecedence(t *testing.T) {
	w := newWorld(t)
	t.Setenv("TF_VAR_x", "from-env")
	cases := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"environment only", nil, "from-env"},
		{"terraform.tfvars wins", map[string][]byte{"terraform.tfvars": []byte(`x = "from-tfvars"`)}, "from-tfvars"},
		{"auto.tfvars wins", map[string][]byte{"z.auto.tfvars.json": []byte(`{"x": "from-auto"}`)}, "from-auto"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := w.component(t, "vars-"+filepath.Base(t.Name()), varComponent)
			r := w.runner(t)
			rep, err := r.Run(testCtx(t), Apply, Unit{Workdir: workdirSpec("plat-ue2-dev", "vars/"+filepath.Base(t.Name()), src, tc.files)})
			require.NoError(t, err)
			var got string
			require.NoError(t, json.Unmarshal(rep.Results[0].Outputs["x"].Value, &got))
			require.Equal(t, tc.want, got)

			// The same configuration under plain terraform.
			plain := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(plain, "main.tf"), []byte(varComponent), 0o644))
			for name, b := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(plain, name), b, 0o644))
			}
			require.Equal(t, plainTerraformOutput(t, w.tf, plain), got)
		})
	}
}

// TestTFLogHonoured: TF_LOG and TF_LOG_PATH in the environment make
// terraform write its log where they say, as plain terraform does.
func TestTFLogHonoured(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_LOG_PATH", filepath.Join(dir, "tf.log"))
	src := w.component(t, "logged", `output "o" { value = 1 }`)
	own := filepath.Join(dir, "own.log")
	units := []Unit{
		{Workdir: workdirSpec("plat-ue2-dev", "logged-a", src, nil)},
		{Workdir: workdirSpec("plat-ue2-dev", "logged-b", src, nil)},
		{Workdir: workdirSpec("plat-ue2-dev", "logged-c", src, nil), Env: map[string]string{"TF_LOG_PATH": own}},
	}
	_, err := w.runner(t).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	// One debug log per unit, beside the path given, 0600 (terraform
	// logs every -var there); a unit's own TF_LOG_PATH is kept.
	for _, id := range []string{"plat-ue2-dev/logged-a", "plat-ue2-dev/logged-b"} {
		p := filepath.Join(dir, "tf."+unitFileName(id)+".log")
		b, err := os.ReadFile(p)
		require.NoError(t, err, id)
		require.Contains(t, string(b), "[DEBUG]")
		require.Equal(t, 2, strings.Count(string(b), "CLI args:"), "this unit's init and apply only")
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	require.Contains(t, readFile(t, own), "[DEBUG]")
	require.NoFileExists(t, filepath.Join(dir, "tf.log"))
}
