package runner

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// envComponent takes var.name (here from TF_VAR_name) and has a
// provisioner write $AWS_PROFILE into var.out.
const envComponent = `
variable "name" { type = string }
variable "out" { type = string }
resource "terraform_data" "env" {
  input = var.name
  provisioner "local-exec" {
    command = "printf '%s' \"$AWS_PROFILE\" > ${var.out}"
  }
}
output "name" { value = var.name }
`

// TestUnitEnvReachesTerraform runs two units of one component at once,
// each with its own Env: each one's variable and provisioner see its own
// values.
func TestUnitEnvReachesTerraform(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "env", envComponent)
	outs := t.TempDir()
	var units []Unit
	for _, stack := range []string{"a", "b"} {
		units = append(units, Unit{
			Workdir: workdirSpec("plat-ue2-"+stack, "env", src,
				map[string][]byte{"terraform.tfvars.json": []byte(`{"out":"` + filepath.Join(outs, stack) + `"}`)}),
			Env: map[string]string{"TF_VAR_name": "name-" + stack, "AWS_PROFILE": "stack-" + stack},
		})
	}
	rep, err := w.runner(t, WithParallelism(2)).Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	for i, stack := range []string{"a", "b"} {
		res := rep.Results[i]
		require.Equal(t, Succeeded, res.Status)
		require.Equal(t, "name-"+stack, outputString(t, res, "name"))
		require.Equal(t, "stack-"+stack, readFile(t, filepath.Join(outs, stack)))
	}
}
