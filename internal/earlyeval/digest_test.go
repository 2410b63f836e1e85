package earlyeval

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// BackendDigest and ModuleDigest change with the value of a variable the
// expressions read, directly or through a local, whichever way it is
// given, and with its default; not with a variable they do not read.
// Literal expressions digest to "".
func TestDigests(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"main.tf": `
variable "env" { default = "dev" }
variable "ver" {}
variable "other" {}
locals { state = "states/${var.env}.tfstate" }
terraform {
  backend "local" { path = local.state }
}
module "dyn" {
  source  = "example.invalid/ns/m/x"
  version = var.ver
}
module "lit" { source = "./lit" }
`,
		"prod.tfvars": `env = "prod"`,
	})
	of := func(g Given) *Inputs { return inputsOf(t, dir, modtree.TerraformFiles, g) }
	base := of(Given{})
	require.NotEmpty(t, base.BackendDigest())
	require.NotEmpty(t, base.ModuleDigest("dyn"))
	require.Empty(t, base.ModuleDigest("lit"), "a literal source and no version")
	require.Empty(t, base.ModuleDigest("nope"), "no such module")

	seen := map[string]string{"default": base.BackendDigest()}
	for name, g := range map[string]Given{
		"Vars":     {Vars: map[string]string{"env": "qa"}},
		"VarFiles": {VarFiles: []string{"prod.tfvars"}},
		"TF_VAR":   {Env: map[string]string{"TF_VAR_env": "stage"}},
	} {
		d := of(g).BackendDigest()
		for other, v := range seen {
			require.NotEqual(t, v, d, "%s digests as %s", name, other)
		}
		seen[name] = d
	}
	// Precedence: a -var wins over TF_VAR_ and var files.
	require.Equal(t, of(Given{Vars: map[string]string{"env": "x"}}).BackendDigest(),
		of(Given{Vars: map[string]string{"env": "x"}, VarFiles: []string{"prod.tfvars"}, Env: map[string]string{"TF_VAR_env": "y"}}).BackendDigest())
	// A value neither reads changes neither.
	other := of(Given{Vars: map[string]string{"other": "z"}})
	require.Equal(t, base.BackendDigest(), other.BackendDigest())
	require.Equal(t, base.ModuleDigest("dyn"), other.ModuleDigest("dyn"))
	// The module's version reads ver, and the backend does not.
	ver := of(Given{Vars: map[string]string{"ver": "1.0.0"}})
	require.NotEqual(t, base.ModuleDigest("dyn"), ver.ModuleDigest("dyn"))
	require.Equal(t, base.BackendDigest(), ver.BackendDigest())
}
