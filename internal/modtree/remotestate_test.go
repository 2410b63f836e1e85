package modtree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// RemoteStatePaths finds the literal paths of local terraform_remote_state
// data sources, in HCL and JSON, and nothing else.
func TestRemoteStatePaths(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"main.tf": `
data "terraform_remote_state" "net" {
  backend = "local"
  config = {
    path = "inputs/network.tfstate"
  }
}
data "terraform_remote_state" "dup" {
  backend = "local"
  config  = { path = "inputs/network.tfstate" }
}
data "terraform_remote_state" "s3" {
  backend = "s3"
  config  = { path = "not/local.tfstate" }
}
data "terraform_remote_state" "computed" {
  backend = "local"
  config  = { path = "${path.module}/x.tfstate" }
}
data "terraform_data" "other" {
  backend = "local"
  config  = { path = "not/remote/state.tfstate" }
}
`,
		"more.tf.json": `{"data": {"terraform_remote_state": {"db": {"backend": "local", "config": {"path": "../db/terraform.tfstate"}}}}}`,
		"broken.tf":    `data "terraform_remote_state" "x" {`,
		".hidden.tf":   `data "terraform_remote_state" "h" { backend = "local" config = { path = "hidden.tfstate" } }`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	got, err := RemoteStatePaths(dir, TerraformFiles)
	require.NoError(t, err)
	require.Equal(t, []string{"../db/terraform.tfstate", "inputs/network.tfstate"}, got)

	_, err = RemoteStatePaths(filepath.Join(dir, "missing"), TerraformFiles)
	require.Error(t, err)
}
