package workdir

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// redisComponent is a component using the builtin terraform_data and the
// test provider, installed from a filesystem mirror.
var redisComponent = map[string]string{
	"main.tf": `
terraform {
  required_providers {
    tfitest = {
      source  = "` + testprovider.Source + `"
      version = "~> 1.0"
    }
  }
}

variable "name" {
  type = string
}

resource "tfitest_item" "cluster" {
  name    = var.name
  payload = "redis"
}

resource "terraform_data" "endpoint" {
  input = tfitest_item.cluster.id
}

output "id" {
  value = tfitest_item.cluster.id
}
`,
}

// tfEnv sets up the test provider in a packed filesystem mirror and returns
// the terraform binary and a base environment that installs from it.
func tfEnv(t *testing.T) (string, []string) {
	t.Helper()
	bin := testenv.Terraform(t)
	prov := testprovider.Build(t)
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, prov, "1.0.0")
	cfg := testprovider.WriteCLIConfig(t, testprovider.CLIConfigFilesystemMirror(mirror))
	return bin, testenv.TerraformEnv(cfg)
}

// terraform runs terraform in w and returns stdout, or an error carrying
// terraform's output.
func terraform(ctx context.Context, bin string, w *Workdir, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = w.Dir
	cmd.Env = append([]string(nil), env...)
	for k, v := range w.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("terraform %s in %s: %w\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), w.Dir, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func mustTerraform(t *testing.T, ctx context.Context, bin string, w *Workdir, env []string, args ...string) string {
	t.Helper()
	out, err := terraform(ctx, bin, w, env, args...)
	require.NoError(t, err)
	return out
}

func stateList(t *testing.T, ctx context.Context, bin string, w *Workdir, env []string) []string {
	t.Helper()
	l := strings.Fields(mustTerraform(t, ctx, bin, w, env, "state", "list"))
	sort.Strings(l)
	return l
}

func tfvars(name string) map[string][]byte {
	return map[string][]byte{
		"terraform.tfvars.json": fmt.Appendf(nil, `{"name": %q}`, name),
		"backend.tf.json":       []byte(`{"terraform": {"backend": {"local": {}}}}`),
	}
}

// TestTwelveInstancesInParallel is the motivating case: twelve instances of
// one component in one stack get twelve workdirs and apply at the same time
// from one source tree, which stays byte-identical.
func TestTwelveInstancesInParallel(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := filepath.Join(t.TempDir(), "components", "terraform", "elasticache")
	testenv.WriteTree(t, src, redisComponent)
	before := snapshot(t, filepath.Dir(src))
	m := newManager(t)

	const n = 12
	ws := make([]*Workdir, n)
	dirs := map[string]bool{}
	for i := range n {
		inst := fmt.Sprintf("elasticache/redis-cluster-%d", i+1)
		ws[i] = prepare(t, m, Spec{Stack: "plat-ue2-dev", Instance: inst, Source: src, Files: tfvars(inst)})
		require.Contains(t, ws[i].Dir, "plat-ue2-dev")
		require.Contains(t, ws[i].Dir, fmt.Sprintf("redis-cluster-%d-", i+1))
		dirs[ws[i].Dir] = true
	}
	require.Len(t, dirs, n, "twelve instances, twelve workdirs")

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			if _, err := terraform(ctx, bin, w, env, "init", "-input=false", "-no-color"); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = terraform(ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "instance %d", i+1)
	}
	for i, w := range ws {
		require.Equal(t, []string{"terraform_data.endpoint", "tfitest_item.cluster"}, stateList(t, ctx, bin, w, env))
		out := mustTerraform(t, ctx, bin, w, env, "output", "-raw", "id")
		require.Equal(t, fmt.Sprintf("item-elasticache/redis-cluster-%d", i+1), out)
		require.FileExists(t, filepath.Join(w.Dir, "terraform.tfstate"))
		require.FileExists(t, filepath.Join(w.Dir, ".terraform.lock.hcl"))
		require.DirExists(t, filepath.Join(w.DataDir, "providers"))
	}
	require.Equal(t, before, snapshot(t, filepath.Dir(src)), "the source tree is byte-identical")
}

// TestStateSurvivesSourceChange applies, changes the component, prepares
// again, and checks that state, data dir and lock file are all still there.
func TestStateSurvivesSourceChange(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := t.TempDir()
	testenv.WriteTree(t, src, redisComponent)
	m := newManager(t)
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src, Files: tfvars("one")}

	w := prepare(t, m, s)
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	want := []string{"terraform_data.endpoint", "tfitest_item.cluster"}
	require.Equal(t, want, stateList(t, ctx, bin, w, env))
	lock, err := os.ReadFile(filepath.Join(w.Dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	data := snapshot(t, w.DataDir)
	require.NoError(t, w.Close())

	changed := maps.Clone(redisComponent)
	changed["main.tf"] += `
resource "terraform_data" "extra" {
  input = "added later"
}
`
	testenv.WriteTree(t, src, changed)
	w = prepare(t, m, s)
	b, err := os.ReadFile(filepath.Join(w.Dir, "main.tf"))
	require.NoError(t, err)
	require.Equal(t, changed["main.tf"], string(b), "the refresh took the new source")
	require.Equal(t, want, stateList(t, ctx, bin, w, env), "state survived the refresh")
	require.Equal(t, data, snapshot(t, w.DataDir), "data dir intact")
	after, err := os.ReadFile(filepath.Join(w.Dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, string(lock), string(after), "lock file intact")

	// The instance carries on from its state: only the new resource is added.
	out := mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Contains(t, out, "1 added, 0 changed, 0 destroyed")
}

// TestRelativeModulesInitAndValidate checks that terraform itself resolves
// ../../modules/redis (which calls ../common) inside the workdir.
func TestRelativeModulesInitAndValidate(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	files := maps.Clone(repo)
	files["components/elasticache/main.tf"] = `
module "redis" {
  source = "../../modules/redis"
}
output "name" { value = module.redis.name }
`
	files["modules/common/main.tf"] = `
resource "terraform_data" "common" {
  input = "redis"
}
output "prefix" { value = terraform_data.common.output }
`
	testenv.WriteTree(t, base, files)
	before := snapshot(t, base)
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: filepath.Join(base, "components", "elasticache")})

	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	out := mustTerraform(t, ctx, bin, w, env, "validate", "-no-color")
	require.Contains(t, out, "The configuration is valid")
	out = mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Contains(t, out, "1 added")
	require.Equal(t, before, snapshot(t, base), "the source tree is never written")
	require.NoDirExists(t, filepath.Join(w.Dir, ".terraform"), "terraform's data lives in the data dir")
	require.FileExists(t, filepath.Join(w.DataDir, "modules", "modules.json"))
}

// TestStateAtCustomPathFollowsLayoutChange applies with the local backend
// keeping state in a subdirectory, then makes the component call a module
// outside its directory (the layout grows and the component moves down a
// level): terraform still finds the state, and the next apply changes
// nothing it already created.
func TestStateAtCustomPathFollowsLayoutChange(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := t.TempDir()
	src := filepath.Join(base, "components", "c")
	testenv.WriteTree(t, base, map[string]string{
		"components/c/main.tf": `resource "terraform_data" "x" { input = "kept" }`,
		"modules/m/main.tf":    `output "o" { value = "from m" }`,
	})
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{
		"backend.tf.json": []byte(`{"terraform": {"backend": {"local": {"path": "state/terraform.tfstate"}}}}`),
	}}
	w := prepare(t, m, s)
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.FileExists(t, filepath.Join(w.Dir, "state", "terraform.tfstate"))
	require.Equal(t, []string{"terraform_data.x"}, stateList(t, ctx, bin, w, env))
	oldDir := w.Dir
	require.NoError(t, w.Close())

	testenv.WriteTree(t, base, map[string]string{"components/c/main.tf": `
resource "terraform_data" "x" { input = "kept" }
module "m" { source = "../../modules/m" }
output "o" { value = module.m.o }
`})
	w = prepare(t, m, s)
	require.NotEqual(t, oldDir, w.Dir, "the component moved inside the grown layout")
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	require.Equal(t, []string{"terraform_data.x"}, stateList(t, ctx, bin, w, env), "the state followed the component")
	out := mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Contains(t, out, "0 added, 0 changed, 0 destroyed")
}

// TestSymlinkedModuleDirsInit: a component whose modules directory is a
// symlink (modules -> ../shared-modules) and one whose module directory is
// itself a symlink initialise in the workdir exactly as in the source.
func TestSymlinkedModuleDirsInit(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/c/main.tf": `
module "x" { source = "./modules/x" }
module "y" { source = "./local/y" }
output "o" { value = "${module.x.o}-${module.y.o}" }
`,
		"components/shared-modules/x/main.tf":      `module "common" { source = "../common" }` + "\n" + `output "o" { value = module.common.o }`,
		"components/shared-modules/common/main.tf": `output "o" { value = "common" }`,
		"elsewhere/y/main.tf":                      `output "o" { value = "y" }`,
	})
	src := filepath.Join(base, "components", "c")
	require.NoError(t, os.Symlink("../shared-modules", filepath.Join(src, "modules")))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "local"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(base, "elsewhere", "y"), filepath.Join(src, "local", "y")))
	before := snapshot(t, base)

	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	for _, d := range []string{"modules", "modules/x", "local/y"} {
		fi, err := os.Lstat(filepath.Join(w.Dir, filepath.FromSlash(d)))
		require.NoError(t, err)
		require.True(t, fi.IsDir(), "%s is materialized as a real directory", d)
	}
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	out := mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Contains(t, out, `o = "common-y"`)
	require.Equal(t, before, snapshot(t, base), "the source tree is never written")
}
