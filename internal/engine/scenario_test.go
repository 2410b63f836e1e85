package engine_test

// Scenarios that run the real engines: what each needs to work offline and
// what each expects of provider addresses in a dependency lock file. The
// lock-file facts recorded here are what pluginc and the runner must follow
// when they write lock files and mirrors for OpenTofu.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// runEngine runs bin in dir with env and returns its combined output.
func runEngine(t *testing.T, bin, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "-no-color")...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func writeFile(t *testing.T, path string, content []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, content, 0o644))
}

// mirrorConfig writes a CLI config whose only installation method is the
// packed filesystem mirror at dir: nothing can come from the network.
func mirrorConfig(t *testing.T, dir string) string {
	return testprovider.WriteCLIConfig(t, []byte("provider_installation {\n  filesystem_mirror {\n    path = \""+filepath.ToSlash(dir)+"\"\n  }\n}\n"))
}

// Both engines init and apply a configuration with no providers
// (terraform_data only) with every provider source closed.
func TestScenarioTerraformDataOffline(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		env := testenv.TerraformEnv(mirrorConfig(t, t.TempDir()))
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "main.tf"), []byte(`resource "terraform_data" "x" {
  input = "hello from `+string(e.Kind)+`"
}
output "x" {
  value = terraform_data.x.output
}
`))
		out, err := runEngine(t, e.Path, dir, env, "init", "-input=false")
		require.NoError(t, err, out)
		out, err = runEngine(t, e.Path, dir, env, "apply", "-auto-approve", "-input=false")
		require.NoError(t, err, out)
		require.Contains(t, out, "Resources: 1 added")
		out, err = runEngine(t, e.Path, dir, env, "output", "-raw", "x")
		require.NoError(t, err, out)
		require.Equal(t, "hello from "+string(e.Kind), out)
	})
}

// lockEntry matches a provider block's header in a lock file.
var lockEntry = regexp.MustCompile(`(?m)^provider "([^"]+)" \{`)

func lockAddrs(t *testing.T, lock []byte) []string {
	t.Helper()
	var addrs []string
	for _, m := range lockEntry.FindAllSubmatch(lock, -1) {
		addrs = append(addrs, string(m[1]))
	}
	return addrs
}

var h1Hash = regexp.MustCompile(`"h1:[^"]+"`)

// What OpenTofu does with a lock file written for Terraform, for a short
// provider address ("NS/tfitest") in an ordinary namespace and in the
// "hashicorp" namespace, which OpenTofu treats specially:
//
//   - A short address means HOST/NS/TYPE with each engine's own default
//     registry host, and the lock file records the expanded address.
//   - Terraform's lock fails `tofu init -lockfile=readonly` ("Provider
//     dependency changes detected"); a plain `tofu init` rewrites it to
//     OpenTofu's host, dropping Terraform's entry, and then works. For
//     hashicorp/* OpenTofu says it rewrote the entry; for other namespaces
//     it silently records a new one.
//   - The same lock with OpenTofu's host is accepted read-only, unchanged.
//   - A lock with both hosts' entries is refused read-only by BOTH engines
//     (the other engine's entry is an unused dependency); plain init drops
//     the entry of the other engine.
//   - The h1: hash is the same for both hosts (it hashes the package).
//   - A mirror that has the package only under Terraform's host cannot
//     serve OpenTofu: it looks under its own host.
func TestScenarioLockFileHosts(t *testing.T) {
	tfBin, tofuBin := testenv.Terraform(t), testenv.Tofu(t)
	tfHost, tofuHost := engine.Terraform.RegistryHost(), engine.OpenTofu.RegistryHost()
	zip, err := os.ReadFile(testprovider.Build(t).Zip(t, "1.0.0"))
	require.NoError(t, err)
	zipName := testprovider.ZipName("1.0.0", testprovider.Platform)

	for _, ns := range []string{"tfisolate", "hashicorp"} {
		t.Run(ns, func(t *testing.T) {
			tfAddr, tofuAddr := tfHost+"/"+ns+"/tfitest", tofuHost+"/"+ns+"/tfitest"
			both := t.TempDir() // the package under both hosts
			writeFile(t, filepath.Join(both, tfHost, ns, "tfitest", zipName), zip)
			writeFile(t, filepath.Join(both, tofuHost, ns, "tfitest", zipName), zip)
			env := testenv.TerraformEnv(mirrorConfig(t, both))
			mainTF := []byte(`terraform {
  required_providers {
    tfitest = { source = "` + ns + `/tfitest", version = "1.0.0" }
  }
}
resource "tfitest_item" "a" { name = "a" }
output "id" { value = tfitest_item.a.id }
`)
			// instance makes a working directory with mainTF and lock (none if nil).
			instance := func(t *testing.T, lock []byte) string {
				d := t.TempDir()
				writeFile(t, filepath.Join(d, "main.tf"), mainTF)
				if lock != nil {
					writeFile(t, filepath.Join(d, ".terraform.lock.hcl"), lock)
				}
				return d
			}
			readLock := func(t *testing.T, d string) []byte {
				b, err := os.ReadFile(filepath.Join(d, ".terraform.lock.hcl"))
				require.NoError(t, err)
				return b
			}

			d := instance(t, nil)
			out, err := runEngine(t, tfBin, d, env, "init", "-input=false")
			require.NoError(t, err, out)
			tfLock := readLock(t, d)
			require.Equal(t, []string{tfAddr}, lockAddrs(t, tfLock))
			tfHashes := h1Hash.FindAll(tfLock, -1)
			require.NotEmpty(t, tfHashes)
			tofuLock := bytes.ReplaceAll(tfLock, []byte(tfAddr), []byte(tofuAddr))

			t.Run("terraform lock, tofu read-only", func(t *testing.T) {
				d := instance(t, tfLock)
				out, err := runEngine(t, tofuBin, d, env, "init", "-input=false", "-lockfile=readonly")
				require.Error(t, err, out)
				require.Contains(t, out, "Provider dependency changes detected")
				if ns == "hashicorp" {
					require.Contains(t, out, "automatically rewrote some entries")
					require.Contains(t, out, tfAddr+" => "+tofuAddr)
				}
				require.Equal(t, tfLock, readLock(t, d), "a read-only init changed the lock file")
			})

			t.Run("terraform lock, tofu init rewrites it", func(t *testing.T) {
				d := instance(t, tfLock)
				out, err := runEngine(t, tofuBin, d, env, "init", "-input=false")
				require.NoError(t, err, out)
				after := readLock(t, d)
				require.Equal(t, []string{tofuAddr}, lockAddrs(t, after))
				require.Equal(t, tfHashes, h1Hash.FindAll(after, -1), "h1 differs between hosts")
				_, err = os.Stat(filepath.Join(d, ".terraform", "providers", tofuAddr, "1.0.0", testprovider.Platform))
				require.NoError(t, err, "tofu installs under its own host")

				out, err = runEngine(t, tofuBin, d, env, "apply", "-auto-approve", "-input=false")
				require.NoError(t, err, out)
				out, err = runEngine(t, tofuBin, d, env, "output", "-raw", "id")
				require.NoError(t, err, out)
				require.Equal(t, "item-a", out)
			})

			t.Run("tofu-host lock, tofu read-only", func(t *testing.T) {
				d := instance(t, tofuLock)
				out, err := runEngine(t, tofuBin, d, env, "init", "-input=false", "-lockfile=readonly")
				require.NoError(t, err, out)
				require.Equal(t, tofuLock, readLock(t, d))
			})

			entry := tfLock[lockEntry.FindIndex(tfLock)[0]:]
			dual := append(append(append([]byte(nil), tfLock...), '\n'), bytes.ReplaceAll(entry, []byte(tfAddr), []byte(tofuAddr))...)
			require.Equal(t, []string{tfAddr, tofuAddr}, lockAddrs(t, dual))
			for _, e := range []struct {
				kind      engine.Kind
				bin, addr string
			}{{engine.Terraform, tfBin, tfAddr}, {engine.OpenTofu, tofuBin, tofuAddr}} {
				t.Run("both hosts' entries, "+string(e.kind), func(t *testing.T) {
					d := instance(t, dual)
					out, err := runEngine(t, e.bin, d, env, "init", "-input=false", "-lockfile=readonly")
					require.Error(t, err, out)
					require.Contains(t, out, "Provider dependency changes detected")

					d = instance(t, dual)
					out, err = runEngine(t, e.bin, d, env, "init", "-input=false")
					require.NoError(t, err, out)
					require.Equal(t, []string{e.addr}, lockAddrs(t, readLock(t, d)))
				})
			}

			t.Run("mirror under terraform's host only, tofu", func(t *testing.T) {
				tfOnly := t.TempDir()
				writeFile(t, filepath.Join(tfOnly, tfHost, ns, "tfitest", zipName), zip)
				d := instance(t, tofuLock)
				out, err := runEngine(t, tofuBin, d, testenv.TerraformEnv(mirrorConfig(t, tfOnly)), "init", "-input=false")
				require.Error(t, err, out)
				require.Contains(t, strings.Join(strings.Fields(out), " "), "provider "+tofuAddr+" was not found")
			})
		})
	}
}
