//go:build unix

package runner

// A fleet of runners behind one provider mirror (issue 15 item 2), all
// real processes: a mirror process (a plugin cache filled from the
// loopback registry, served by pluginc's MirrorHandler over loopback
// HTTPS) and runner processes, each with its own workdir root and plugin
// cache whose first source is the mirror, applying real instances with
// the engine. The children are in child_test.go.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// fleet is the loopback registry serving the test provider and a running
// mirror process in front of it.
type fleet struct {
	tf         string
	dir        string
	reg        *testregistry.Server
	pkg        testregistry.Package
	h1         string // the package's h1: hash, as the registry serves it
	regInfo    fleetRegistry
	mirror     *childproc.Proc
	mirrorURL  string
	mirrorCert string
}

// startFleet starts the registry and the mirror process; pauseAfter > 0
// makes the mirror hold every archive response after that many bytes.
func startFleet(t *testing.T, tf string, pauseAfter int64) *fleet {
	t.Helper()
	f := &fleet{tf: tf, dir: t.TempDir()}
	zip := testprovider.Build(t).Zip(t, providerVersion)
	b, err := os.ReadFile(zip)
	require.NoError(t, err)
	f.h1, err = dirhash.HashZip(zip, dirhash.Hash1)
	require.NoError(t, err)
	f.reg = testregistry.Start(t)
	f.pkg = testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type,
		Version: providerVersion, Platform: testprovider.Platform, Zip: b}
	f.reg.MustAdd(t, f.pkg)
	f.regInfo = fleetRegistry{Host: f.reg.Host(), Addr: f.reg.Addr(), CAFile: filepath.Join(f.dir, "registry-ca.pem")}
	require.NoError(t, f.reg.WriteCAFile(f.regInfo.CAFile))

	f.mirrorCert = filepath.Join(f.dir, "mirror.pem")
	cfg, err := json.Marshal(fleetMirrorConfig{Registry: f.regInfo, Cache: filepath.Join(f.dir, "mirror-cache"),
		CertFile: f.mirrorCert, PauseAfter: pauseAfter})
	require.NoError(t, err)
	f.mirror = childproc.Start(t, fleetMirrorRole, childproc.WithEnv(childConfigEnv+"="+string(cfg)), childproc.WithTimeout(childTimeout))
	line := f.mirror.Next(t)
	u, ok := strings.CutPrefix(line, fleetMirrorURLPrefix)
	require.True(t, ok, "the mirror said %q", line)
	f.mirrorURL = u
	return f
}

// fleetMember is a runner process of the fleet, started and waiting at
// its start barrier.
type fleetMember struct {
	name   string
	p      *childproc.Proc
	cache  string
	states string
}

// runner starts a runner process named name on a workdir root, plugin
// cache and checkout of the item component of its own, with instances
// instances, each with a local backend under its dir. With fallback, the
// registry is its next source after the mirror. It waits for its stdin
// to close before it runs.
func (f *fleet) runner(t *testing.T, name string, instances int, fallback bool) *fleetMember {
	t.Helper()
	dir := filepath.Join(f.dir, name)
	m := &fleetMember{name: name, cache: filepath.Join(dir, "cache"), states: filepath.Join(dir, "states")}
	src := filepath.Join(dir, "src", "item")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(itemComponent), 0o644))
	cfg := fleetRunnerConfig{TF: f.tf, Root: filepath.Join(dir, "workdirs"), Cache: m.cache,
		MirrorURL: f.mirrorURL, MirrorCert: f.mirrorCert}
	if fallback {
		cfg.Fallback = &f.regInfo
	}
	for i := range instances {
		inst := fmt.Sprintf("item%02d", i)
		cfg.Units = append(cfg.Units, workdirSpec("plat-ue2-dev", "item/"+inst, src,
			files(t, map[string]any{"name": name + "-" + inst}, m.statePath(inst))))
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	m.p = childproc.Start(t, fleetRunnerRole, childproc.WithEnv(childConfigEnv+"="+string(b)), childproc.WithTimeout(childTimeout))
	return m
}

func (m *fleetMember) statePath(inst string) string {
	return filepath.Join(m.states, inst+".tfstate")
}

// result waits for the runner to exit, requires that it exited 0, and
// returns what it reported.
func (m *fleetMember) result(t *testing.T) fleetRunnerResult {
	t.Helper()
	require.NoError(t, m.p.Wait(), "runner %s:\n%s", m.name, m.p.Output())
	var r fleetRunnerResult
	lastResult(t, m.p.Output(), fleetRunnerResultPrefix, &r)
	return r
}

// lastResult decodes, into v, the JSON after the last line of out that
// starts with prefix: what a child runner process printed when its Run
// was over (its result line comes last, after its own log output).
func lastResult(t *testing.T, out, prefix string, v any) {
	t.Helper()
	i := strings.LastIndex(out, prefix)
	require.GreaterOrEqual(t, i, 0, "no result line %q in:\n%s", prefix, out)
	line, _, _ := strings.Cut(out[i+len(prefix):], "\n")
	require.NoError(t, json.Unmarshal([]byte(line), v))
}

// TestFleetMirrorRunners (issue 15 item 2): one mirror process and four
// runner processes, each with its own workdir root and plugin cache whose
// only source is the mirror, apply twelve instances each at once from a
// cold start. The mirror's one upstream download is held until every
// runner has begun its download from the mirror, so all four ask at
// once. Every instance applies, the registry counts one download for the
// whole fleet, every runner cache downloads once (from the mirror), and
// all 48 lock files are the same and lock the registry's package by its
// h1: hash.
func TestFleetMirrorRunners(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		const runners, instances = 4, 12
		f := startFleet(t, e.Path, 0)
		gate := f.reg.Hold()
		var ms []*fleetMember
		for i := range runners {
			ms = append(ms, f.runner(t, fmt.Sprintf("runner%d", i), instances, false))
		}
		start := time.Now()
		for _, m := range ms {
			require.NoError(t, m.p.Stdin.Close())
		}
		select {
		case <-gate.Started():
		case <-time.After(childTimeout):
			t.Fatal("the mirror never downloaded from the registry")
		}
		for _, m := range ms {
			m.p.WaitLine(t, "downloading provider")
		}
		gate.Release()
		var lock, digest string
		for _, m := range ms {
			res := m.result(t)
			require.Empty(t, res.Errs, "runner %s", m.name)
			require.Equal(t, instances, res.Succeeded, "runner %s", m.name)
			require.Equal(t, int64(1), res.Downloads, "runner %s: one download from the mirror", m.name)
			require.Len(t, res.Locks, 1, "runner %s: its %d lock files are one", m.name, instances)
			for d, n := range res.Locks {
				require.Equal(t, instances, n, "runner %s: every instance has a lock file", m.name)
				if digest == "" {
					digest, lock = d, res.Lock
				}
				require.Equal(t, digest, d, "runner %s's lock file is the fleet's:\n%s\nwant:\n%s", m.name, res.Lock, lock)
			}
			for i := range instances {
				inst := fmt.Sprintf("item%02d", i)
				st := stateResources(t, m.statePath(inst))
				require.Equal(t, m.name+"-"+inst, st["tfitest_item.this"]["name"])
			}
		}
		wall := time.Since(start)
		require.Equal(t, 1, f.reg.Downloads(f.pkg.Key()), "one upstream download for the fleet")
		require.Equal(t, 1, f.reg.TotalDownloads())
		require.Contains(t, lock, `provider "`+testprovider.Source+`"`)
		require.Contains(t, lock, `"`+f.h1+`"`, "the lock file holds the registry package's h1:")
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("fleet (%s): %d runner processes x %d instances applied, %d upstream download(s) (the registry's count); %s from the start barrier; loadavg %s",
			e.Kind, runners, instances, f.reg.Downloads(f.pkg.Key()), wall.Round(time.Millisecond), strings.TrimSpace(string(load)))
	})
}

// TestFleetMirrorKilledMidDownload (issue 15 item 2): the mirror process
// is SIGKILLed while two runner processes read the archive from it (each
// response held after 1 MiB). The runner with the registry as its next
// source applies all twelve instances from it, and its cache logs the
// failover naming the mirror; the runner with the mirror alone fails
// every instance with an error naming the mirror, and its cache holds no
// entry and no partial download.
func TestFleetMirrorKilledMidDownload(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		const instances = 12
		f := startFleet(t, e.Path, 1<<20)
		alone := f.runner(t, "alone", instances, false)
		backed := f.runner(t, "backed", instances, true)
		require.NoError(t, alone.p.Stdin.Close())
		require.NoError(t, backed.p.Stdin.Close())
		f.mirror.WaitLine(t, fleetMirrorPaused)
		f.mirror.WaitLine(t, fleetMirrorPaused)
		require.Error(t, f.mirror.Kill(), "the mirror was killed, not done")

		res := alone.result(t)
		require.Zero(t, res.Succeeded)
		require.Len(t, res.Errs, instances)
		for _, e := range res.Errs {
			require.Contains(t, e, f.mirrorURL, "the error names the mirror")
		}
		t.Logf("the runner with the mirror alone: %s", res.Errs[0])
		require.Empty(t, res.Locks, "no instance got a lock file")
		require.Zero(t, res.Downloads)
		require.NoDirExists(t, filepath.Join(alone.cache, testprovider.Host), "no entry for the package")
		tmp, err := os.ReadDir(filepath.Join(alone.cache, ".pluginc", "tmp"))
		require.NoError(t, err)
		require.Empty(t, tmp, "no partial download left")
		locks := filepath.Join(alone.cache, ".pluginc", "locks") // the package's flock file, which stays
		require.NoError(t, filepath.WalkDir(alone.cache, func(p string, d os.DirEntry, err error) error {
			if err == nil && p == locks {
				return filepath.SkipDir
			}
			if err == nil && strings.Contains(d.Name(), testprovider.Type) {
				return fmt.Errorf("%s is left in the cache of the runner that failed", p)
			}
			return err
		}))

		res = backed.result(t)
		require.Empty(t, res.Errs)
		require.Equal(t, instances, res.Succeeded)
		require.Equal(t, int64(1), res.Downloads)
		require.Len(t, res.Locks, 1)
		require.Contains(t, res.Lock, `"`+f.h1+`"`, "the package installed is the registry's")
		require.DirExists(t, filepath.Join(backed.cache, ".pluginc", "packages", testprovider.Host, testprovider.Namespace, testprovider.Type, providerVersion, testprovider.Platform))
		require.Contains(t, backed.p.Output(), "source failed to deliver the package; trying the next source")
		require.Contains(t, backed.p.Output(), "network mirror "+f.mirrorURL)
		require.Equal(t, 2, f.reg.Downloads(f.pkg.Key()), "the mirror's and the fallback's")
	})
}
