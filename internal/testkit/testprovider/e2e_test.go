package testprovider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

const rootModule = `
terraform {
  required_providers {
    tfitest = {
      source  = "` + testprovider.Source + `"
      version = "~> 1.0"
    }
  }
}

variable "payload" {
  type = string
}

resource "tfitest_item" "a" {
  name    = "alpha"
  payload = var.payload
}

data "tfitest_echo" "e" {
  value = tfitest_item.a.id
}

resource "terraform_data" "d" {
  input = tfitest_item.a.id
}

output "id" {
  value = tfitest_item.a.id
}

output "echo" {
  value = data.tfitest_echo.e.result
}

output "payload" {
  value = tfitest_item.a.payload
}
`

// tf runs terraform in dir with env and returns stdout; a failure fails the
// test with terraform's output.
func tf(t *testing.T, ctx context.Context, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "terraform %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

type outputs struct {
	ID      struct{ Value string } `json:"id"`
	Echo    struct{ Value string } `json:"echo"`
	Payload struct{ Value string } `json:"payload"`
}

func readOutputs(t *testing.T, ctx context.Context, bin, dir string, env []string) outputs {
	t.Helper()
	var o outputs
	require.NoError(t, json.Unmarshal([]byte(tf(t, ctx, bin, dir, env, "output", "-json")), &o))
	return o
}

// TestTerraformEndToEnd installs the padded provider from a packed
// filesystem mirror with real Terraform and walks it through create, update
// and destroy.
func TestTerraformEndToEnd(t *testing.T) {
	tfBin := testenv.Terraform(t)
	bin := testprovider.Build(t, testprovider.WithPadding(paddedSize))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, bin, "1.0.0", "1.1.0")
	cfg := testprovider.WriteCLIConfig(t, testprovider.CLIConfigFilesystemMirror(mirror))
	env := testenv.TerraformEnv(cfg)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(rootModule), 0o644))

	tf(t, ctx, tfBin, dir, env, "init", "-input=false", "-no-color")
	lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Contains(t, string(lock), `provider "`+testprovider.Source+`"`)
	require.Contains(t, string(lock), `version     = "1.1.0"`, "the newest version matching ~> 1.0 must be selected")
	installed := filepath.Join(dir, ".terraform", "providers", testprovider.Source, "1.1.0", testprovider.Platform, testprovider.ExecutableName("1.1.0"))
	st, err := os.Stat(installed)
	require.NoError(t, err)
	require.Equal(t, bin.Size, st.Size(), "terraform must install the whole padded binary")

	tf(t, ctx, tfBin, dir, env, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "payload=one")
	list := strings.Fields(tf(t, ctx, tfBin, dir, env, "state", "list"))
	require.ElementsMatch(t, []string{"data.tfitest_echo.e", "terraform_data.d", "tfitest_item.a"}, list)
	o := readOutputs(t, ctx, tfBin, dir, env)
	require.Equal(t, "item-alpha", o.ID.Value)
	require.Equal(t, "item-alpha", o.Echo.Value)
	require.Equal(t, "one", o.Payload.Value)

	// A payload change is an in-place update, never a replacement.
	plan := tf(t, ctx, tfBin, dir, env, "plan", "-input=false", "-no-color", "-var", "payload=two")
	require.Contains(t, plan, "0 to add, 1 to change, 0 to destroy")
	tf(t, ctx, tfBin, dir, env, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "payload=two")
	o = readOutputs(t, ctx, tfBin, dir, env)
	require.Equal(t, "item-alpha", o.ID.Value)
	require.Equal(t, "two", o.Payload.Value)

	tf(t, ctx, tfBin, dir, env, "destroy", "-auto-approve", "-input=false", "-no-color", "-var", "payload=two")
	require.Empty(t, strings.TrimSpace(tf(t, ctx, tfBin, dir, env, "state", "list")))
}
