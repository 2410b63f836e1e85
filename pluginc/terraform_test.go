package pluginc

import (
	"bytes"
	"context"
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

const tfModule = `terraform {
  required_providers {
    tfitest = {
      source  = "` + testprovider.Source + `"
      version = ">= 1.0, < 2.0"
    }
  }
}

resource "tfitest_item" "a" {
  name = "alpha"
}
`

func terraform(t *testing.T, ctx context.Context, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "terraform %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// TestTerraformUsesCache: with CLIConfig and LockFile, terraform init
// installs the provider as a symlink into the cache, keeps the lock file
// byte for byte, and the provider works for plan and apply.
func TestTerraformUsesCache(t *testing.T) {
	tfBin := testenv.Terraform(t)
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0", "2.0.0"})
	c := f.open(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pkgs, err := c.Ensure(ctx, Requirement{Provider: f.p, Constraints: ">= 1.0, < 2.0"})
	require.NoError(t, err)

	dir := t.TempDir()
	lock := LockFile(pkgs)
	require.Contains(t, string(lock), `constraints = ">= 1.0.0, < 2.0.0"`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tfModule), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".terraform.lock.hcl"), lock, 0o644))
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	require.NoError(t, os.WriteFile(cfg, c.CLIConfig(), 0o644))
	env := testenv.TerraformEnv(cfg)

	terraform(t, ctx, tfBin, dir, env, "init", "-input=false", "-no-color")
	got, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, string(lock), string(got), "terraform init must leave the lock file as LockFile wrote it")

	link := filepath.Join(dir, ".terraform", "providers", testprovider.Source, "1.1.0", testprovider.Platform)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "the provider must be a symlink into the cache")
	target, err := filepath.EvalSymlinks(link)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(pkgs[0].Dir)
	require.NoError(t, err)
	require.Equal(t, want, target)

	terraform(t, ctx, tfBin, dir, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Equal(t, "tfitest_item.a", strings.TrimSpace(terraform(t, ctx, tfBin, dir, env, "state", "list")))
	plan := terraform(t, ctx, tfBin, dir, env, "plan", "-input=false", "-no-color")
	require.Contains(t, plan, "No changes.")

	// Terraform never wrote into the cache: still exactly one package.
	require.Equal(t, []string{testprovider.Source}, c.cachedProviders())
	got, err = os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, string(lock), string(got))
}
