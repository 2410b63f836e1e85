//go:build unix

package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/treesum"
	"github.com/tfisolate/tfisolate/pluginc"
)

// envPlant names the file that tells TestPlantChild, run as uid 65534,
// what to plant.
const envPlant = "TFISOLATE_RUNNER_PLANT"

// plant is an attacker's provider package and install record.
type plant struct {
	Entry, Meta string
	Name        string // the executable's name
	Content     []byte
	Hashes      []string // claimed besides the planted files' own h1:
	Zip         string   // the zh: claimed for it
}

// TestPlantChild is not a test: it is another user's process (uid
// 65534) planting a provider package with an install record that matches
// it exactly and claims the genuine zip's zh:.
func TestPlantChild(t *testing.T) {
	spec := os.Getenv(envPlant)
	if spec == "" {
		t.Skip("helper process acting as another user")
	}
	b, err := os.ReadFile(spec)
	require.NoError(t, err)
	var p plant
	require.NoError(t, json.Unmarshal(b, &p))
	require.NoError(t, os.MkdirAll(p.Entry, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p.Entry, p.Name), p.Content, 0o755))
	files, err := treesum.Record(p.Entry)
	require.NoError(t, err)
	h1, err := dirhash.HashDir(p.Entry, "", dirhash.Hash1)
	require.NoError(t, err)
	rec, err := json.Marshal(map[string]any{"hashes": append([]string{h1}, p.Hashes...), "zip": p.Zip,
		"source": "registry", "h1": h1, "files": files})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Meta), 0o755))
	require.NoError(t, os.WriteFile(p.Meta, rec, 0o644))
}

// plantAsOther runs TestPlantChild as uid/gid 65534, from a copy of
// this test binary that user can run (go test's build dir is private).
func plantAsOther(t *testing.T, p plant) {
	t.Helper()
	dir, err := os.MkdirTemp("", "runner-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "runner.test")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	b, err := json.Marshal(p)
	require.NoError(t, err)
	spec := filepath.Join(dir, "plant.json")
	require.NoError(t, os.WriteFile(spec, b, 0o644))
	cmd := exec.Command(bin, "-test.run=^TestPlantChild$", "-test.count=1")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), envPlant+"="+spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	require.NoError(t, cmd.Run(), "the other user's process:\n%s", out.String())
}

// TestPlantedProviderNeverRuns is the attack of issue 22: another user
// plants a "provider" (a script that leaves a marker when run) in the
// cache with an install record that matches it and lists the genuine
// zh:, and the component commits a lock file. Whether the cache was
// writable by others once (their entry left behind after its mode was
// fixed) or is shared with their group on purpose (WithSharedGroup), a
// Run through real terraform never runs the planted binary, applies with
// the genuine provider, and leaves the committed lock file as it was:
// the same as plain terraform with the same cache as a filesystem mirror
// and the same lock file, which refuses the planted package.
func TestPlantedProviderNeverRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it plays a second user (uid 65534) in a child process; CI runs the tests as root")
	}
	for _, tc := range []struct {
		name   string
		shared bool
	}{
		{"their entry left in a private cache", false},
		{"cache shared with their group", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			// Reachable by the other user, as a CI workspace is.
			require.NoError(t, os.Chmod(filepath.Dir(w.dir), 0o755))
			require.NoError(t, os.Chmod(w.dir, 0o755))
			cache := w.cache
			if tc.shared {
				var err error
				cache, err = pluginc.Open(filepath.Join(w.dir, "shared-cache"), pluginc.WithSharedGroup(65534),
					pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(w.reg.HTTPClient()))
				require.NoError(t, err)
			}
			ctx := testCtx(t)

			// The committed lock file: the genuine package's hashes.
			genuine, err := pluginc.Open(filepath.Join(t.TempDir(), "genuine"),
				pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(w.reg.HTTPClient()))
			require.NoError(t, err)
			prov := mustProvider(t, testprovider.Source)
			pkgs, err := genuine.Ensure(ctx, pluginc.Requirement{Provider: prov, Constraints: ">= 1.0.0"})
			require.NoError(t, err)
			committed := pluginc.LockFile(pkgs)
			src := w.component(t, "planted", itemComponent)
			require.NoError(t, os.WriteFile(filepath.Join(src, lockFileName), committed, 0o644))
			sum := sha256.Sum256(w.pkg.Zip)
			zh := "zh:" + hex.EncodeToString(sum[:])
			require.Contains(t, string(committed), zh)

			// The plant.
			marker := filepath.Join(w.dir, "PLANTED-RAN")
			rel := filepath.Join(prov.Hostname, prov.Namespace, prov.Type, providerVersion)
			p := plant{
				Entry:   filepath.Join(cache.PackagesDir(), rel, testprovider.Platform),
				Meta:    filepath.Join(cache.Dir(), ".pluginc", "records", rel, testprovider.Platform+".json"),
				Name:    testprovider.ExecutableName(providerVersion),
				Content: []byte("#!/bin/sh\ntouch '" + marker + "'\nexit 1\n"),
				Hashes:  []string{zh}, Zip: zh,
			}
			if tc.shared {
				plantAsOther(t, p)
			} else {
				// Back when the cache was writable by others (and
				// reachable: Open makes a new root 0700).
				require.NoError(t, os.Chmod(cache.Dir(), 0o755))
				way := []string{filepath.Dir(p.Entry), filepath.Dir(p.Meta)}
				for _, d := range way {
					require.NoError(t, os.MkdirAll(d, 0o755))
					require.NoError(t, os.Chmod(d, 0o777))
				}
				plantAsOther(t, p)
				for _, d := range way {
					require.NoError(t, os.Chmod(d, 0o755))
				}
			}

			// Plain terraform, the cache as its filesystem mirror, the
			// committed lock file: refused, never run.
			plain := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(plain, "main.tf"), []byte(itemComponent), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(plain, lockFileName), committed, 0o644))
			cfg := filepath.Join(t.TempDir(), "plain.tfrc.json")
			mirror, err := json.Marshal(map[string]any{"provider_installation": []any{map[string]any{
				"filesystem_mirror": []any{map[string]any{"path": cache.PackagesDir(), "include": []string{testprovider.Source}}}}}})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(cfg, mirror, 0o644))
			cmd := exec.CommandContext(ctx, w.tf, "init", "-input=false", "-no-color")
			cmd.Dir, cmd.Env = plain, testenv.TerraformEnv(cfg)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "plain terraform must refuse the planted package:\n%s", out)
			require.Contains(t, strings.Join(strings.Fields(string(out)), " "), "checksums", "%s", out)
			require.NoFileExists(t, marker)
			require.Equal(t, string(committed), readFile(t, filepath.Join(plain, lockFileName)))

			// The Run.
			state := filepath.Join(w.dir, "planted.tfstate")
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", "planted", src, files(t, map[string]any{"name": "planted"}, state))}
			r, err := New(WithWorkdirs(w.wd), WithPluginCache(cache), WithTerraform(w.tf))
			require.NoError(t, err)
			_, err = r.Run(ctx, Apply, u)
			require.NoFileExists(t, marker, "the planted provider ran")
			require.NoError(t, err)
			require.Contains(t, stateResources(t, state), "tfitest_item.this")
			require.Equal(t, string(committed), string(lockFileOf(t, w, "plat-ue2-dev", "planted")), "the committed lock file is unchanged")
			require.Equal(t, string(committed), readFile(t, filepath.Join(src, lockFileName)))
			bin, err := os.ReadFile(filepath.Join(p.Entry, p.Name))
			require.NoError(t, err)
			require.NotEqual(t, p.Content, bin, "the entry was refilled with the genuine package")
		})
	}
}
