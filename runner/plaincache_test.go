package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestPlainEnginesSharingTheCacheDir is issue 41's shared CI agent: a
// team points plain terraform's plugin_cache_dir, and plain tofu's
// TF_PLUGIN_CACHE_DIR, at the very dir it gives pluginc.Open. Round
// after round, a plain terraform and a plain tofu take turns running
// init in fresh dirs, installing into that plugin cache (the same
// package the SDK's cache holds, or another build of the test provider
// for the same address and version), while a Run plans units through
// the SDK's cache. No unit fails (a plain engine unpacking into the
// entry a unit's terraform runs was "text file busy" or a checksum the
// lock file does not hold), and every plain init succeeds: the SDK's
// terraform executes only what the cache wrote, below PackagesDir,
// where no plain engine writes. The packages are padded so that an
// unpacking takes long enough to meet the units' terraform.
func TestPlainEnginesSharingTheCacheDir(t *testing.T) {
	const (
		rounds  = 5
		units   = 3
		padding = 24 << 20
	)
	tofu := testenv.Tofu112.Binary(t)
	sdkBuild := testprovider.Build(t, testprovider.WithPadding(padding))
	for _, tc := range []struct {
		name  string
		plain *testprovider.Binary // what the plain engines install
	}{
		{"the same package", sdkBuild},
		{"another build for the same address and version", testprovider.Build(t, testprovider.WithPadding(padding+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, sdkBuild)
			ctx := testCtx(t)
			mirror := t.TempDir()
			testprovider.WriteFilesystemMirror(t, mirror, tc.plain, providerVersion)
			rc := testprovider.CLIConfigFilesystemMirror(mirror)
			tfRC := testprovider.WriteCLIConfig(t, fmt.Appendf(rc, "plugin_cache_dir = %q\n", filepath.ToSlash(w.cache.Dir())))
			tofuRC := testprovider.WriteCLIConfig(t, rc)
			plain := []struct {
				name, bin string
				env       []string
			}{
				{"terraform", w.tf, testenv.TerraformEnv(tfRC)},
				{"tofu", tofu, append(testenv.TerraformEnv(tofuRC), "TF_PLUGIN_CACHE_DIR="+w.cache.Dir())},
			}
			src := w.component(t, "shared", itemComponent)
			r := w.runner(t)

			var failures, plainFailures []string
			for round := range rounds {
				var wg sync.WaitGroup
				// The plain engines take turns (two plain inits sharing
				// a plugin cache at once tear each other's packages:
				// hashicorp/terraform#31964), beside the Run.
				wg.Go(func() {
					for _, e := range plain {
						dir := filepath.Join(w.dir, "plain", fmt.Sprintf("%s-%d", e.name, round))
						if err := os.MkdirAll(dir, 0o755); err != nil {
							plainFailures = append(plainFailures, err.Error())
							continue
						}
						if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(itemComponent), 0o644); err != nil {
							plainFailures = append(plainFailures, err.Error())
							continue
						}
						cmd := exec.CommandContext(ctx, e.bin, "init", "-input=false", "-no-color")
						cmd.Dir, cmd.Env = dir, e.env
						if out, err := cmd.CombinedOutput(); err != nil {
							plainFailures = append(plainFailures, fmt.Sprintf("round %d, plain %s init: %v\n%s", round, e.name, err, out))
						}
					}
				})
				us := make([]Unit, units)
				for i := range us {
					inst := fmt.Sprintf("r%d-u%d", round, i)
					us[i] = Unit{Workdir: workdirSpec("plat-ue2-dev", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(w.dir, inst+".tfstate")))}
				}
				rep, err := r.Run(ctx, Plan, us...)
				require.NotNil(t, rep, "%v", err)
				for _, res := range rep.Results {
					if res.Status != Succeeded {
						failures = append(failures, fmt.Sprintf("round %d, unit %s: %s: %v", round, res.Unit, res.Status, res.Err))
					}
				}
				wg.Wait()
			}
			require.Empty(t, failures, "%d of %d SDK units failed beside plain engines writing the cache dir as their plugin cache:\n%s",
				len(failures), rounds*units, strings.Join(failures, "\n"))
			require.Empty(t, plainFailures, "the plain engines keep working:\n%s", strings.Join(plainFailures, "\n"))

			// Each unit's terraform links the cache's own entry.
			for i := range units {
				home, err := w.wd.Home("plat-ue2-dev", fmt.Sprintf("r%d-u%d", rounds-1, i))
				require.NoError(t, err)
				var links []string
				require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
					if err == nil && d.Name() == testprovider.Platform && filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p))))) == testprovider.Host {
						target, err := filepath.EvalSymlinks(p)
						if err != nil {
							return err
						}
						links = append(links, target)
					}
					return err
				}))
				require.NotEmpty(t, links, "no provider in the data dir under %s", home)
				for _, l := range links {
					require.True(t, strings.HasPrefix(l, w.cache.PackagesDir()+string(filepath.Separator)), "the unit's provider %s is below %s", l, w.cache.PackagesDir())
				}
			}

			// The plain engines did write the dir as their plugin cache.
			plainEntry := filepath.Join(w.cache.Dir(), testprovider.Host, testprovider.Namespace, testprovider.Type, providerVersion, testprovider.Platform)
			got, err := os.ReadFile(filepath.Join(plainEntry, testprovider.ExecutableName(providerVersion)))
			require.NoError(t, err)
			require.Equal(t, int64(len(got)), tc.plain.Size, "the plain engines' plugin cache holds their package")
		})
	}
}
