//go:build unix

package stress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// servedVersion is what the component's "~> 1.0" selects among
// demo.Versions: the only package any run downloads.
const servedVersion = "1.1.0"

// world is one scenario on disk: the component source, a workdir root and
// a provider cache shared by every process, and the loopback registry.
type world struct {
	dir, tf, source, root, cache, caFile string
	prov                                 *demo.Provider
	infra                                map[string]string // the source tree as first written
}

// newWorld serves the demo provider (built once per test binary) from a
// fresh registry whose download counters start at zero.
func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dir: t.TempDir(), tf: testenv.Terraform(t)}
	buildOnce.Do(func() { buildDir, buildErr = os.MkdirTemp("", "tfisolate-stress-provider-") })
	require.NoError(t, buildErr)
	prov, err := demo.ServeProvider(buildDir, 0)
	require.NoError(t, err)
	t.Cleanup(prov.Close)
	w.prov = prov
	w.caFile = filepath.Join(w.dir, "ca.pem")
	require.NoError(t, prov.WriteCAFile(w.caFile))
	w.source, err = demo.WriteInfra(filepath.Join(w.dir, "infra"))
	require.NoError(t, err)
	w.infra = treeSnapshot(t, filepath.Join(w.dir, "infra"))
	w.root = filepath.Join(w.dir, "workdirs")
	w.cache = filepath.Join(w.dir, "plugin-cache")
	return w
}

func (w *world) config(instances []int, parallelism int, latency time.Duration) childConfig {
	return childConfig{
		TF: w.tf, Root: w.root, Cache: w.cache, Source: w.source,
		RegistryHost: w.prov.Host(), RegistryAddr: w.prov.Addr(), CAFile: w.caFile,
		Instances: instances, Parallelism: parallelism, Latency: latency, LockTimeout: 20 * time.Second,
	}
}

func span(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

// proc is a runner process: the test binary re-executed as an "apply"
// child (see child), in its own process group so that a kill reaches
// everything it started.
type proc struct {
	*childproc.Proc
	name   string
	stderr bytes.Buffer
	exited chan struct{} // closed once every line is handled and the process waited for
	err    error         // its exit status; read after exited
	res    *childResult  // its last line; nil if it died before
}

// startProc starts a runner process. onMsg sees every event as it arrives,
// on the goroutine that reads the process's stdout; it must not block.
func startProc(t *testing.T, name string, cfg childConfig, onMsg func(*proc, message)) *proc {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	p := &proc{name: name, exited: make(chan struct{})}
	p.Proc = childproc.Start(t, applyRole, childproc.WithEnv(childConfigEnv+"="+string(b)), childproc.WithStderr(&p.stderr),
		childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}), childproc.WithTimeout(childTimeout))
	go func() {
		defer close(p.exited)
		for {
			l, ok := p.ReadLine()
			if !ok {
				break
			}
			var m message
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			if m.Done != nil {
				p.res = m.Done
			} else if onMsg != nil {
				onMsg(p, m)
			}
		}
		p.err = p.Wait()
	}()
	t.Cleanup(func() {
		p.kill()
		<-p.exited
	})
	return p
}

// kill SIGKILLs the process group: the runner process, and with it (by
// tfexec's Pdeathsig) its terraform children.
func (p *proc) kill() { _ = syscall.Kill(-p.PID(), syscall.SIGKILL) }

// requireSucceeded waits for p and checks that it exited cleanly with every
// one of its units succeeded.
func (p *proc) requireSucceeded(t *testing.T, units int) *childResult {
	t.Helper()
	<-p.exited
	require.NoError(t, p.err, "%s: stderr:\n%s", p.name, p.stderr.String())
	require.NotNil(t, p.res, "%s printed no result", p.name)
	require.Empty(t, p.res.RunErr, "%s", p.name)
	require.Len(t, p.res.Results, units, "%s", p.name)
	for _, u := range p.res.Results {
		if u.Status != "succeeded" {
			log, _ := os.ReadFile(u.Log)
			t.Fatalf("%s: unit %s %s: %s\nlog %s:\n%s", p.name, u.Unit, u.Status, u.Err, u.Log, tail(log, 4000))
		}
	}
	return p.res
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// treeSnapshot maps every entry under dir to its mode, mtime and content,
// so that any write shows.
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String() + " " + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = v
		return nil
	}))
	return out
}

// home is the directory of a demo instance's workdir.
func (w *world) home(instance string) (string, error) {
	wds, err := workdir.New(w.root)
	if err != nil {
		return "", err
	}
	return wds.Home(demo.Stack, instance)
}

// requireStates checks that the state of each instance holds exactly its
// two resources (the cluster named after the instance and the provisioning
// step), that every instance got the same lock file, and that no scratch
// of an unfinished workdir build is left in the root.
func (w *world) requireStates(t *testing.T, instances []int) {
	t.Helper()
	wds, err := workdir.New(w.root)
	require.NoError(t, err)
	var lockFile []byte
	for _, n := range instances {
		home, err := wds.Home(demo.Stack, demo.Instance(n))
		require.NoError(t, err)
		st := stateFile(t, home)
		lf, err := os.ReadFile(filepath.Join(filepath.Dir(st), ".terraform.lock.hcl"))
		require.NoError(t, err, "lock file of %s", demo.Instance(n))
		if lockFile == nil {
			lockFile = lf
		}
		require.Equal(t, string(lockFile), string(lf), "lock file of %s", demo.Instance(n))
		var state struct {
			Resources []struct {
				Module, Mode, Type, Name string
				Instances                []struct {
					Attributes map[string]any
				}
			}
		}
		b, err := os.ReadFile(st)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &state), "state of %s", demo.Instance(n))
		got := map[string]map[string]any{}
		for _, r := range state.Resources {
			require.Len(t, r.Instances, 1, "%s in %s", r.Name, st)
			got[fmt.Sprintf("%s.%s.%s", r.Module, r.Type, r.Name)] = r.Instances[0].Attributes
		}
		require.Len(t, got, 2, "resources of %s: %v", demo.Instance(n), got)
		item := got["module.redis.tfitest_item.cluster"]
		require.NotNil(t, item, "no cluster in the state of %s", demo.Instance(n))
		require.Equal(t, fmt.Sprintf("%s-redis-cluster-%d", demo.Stack, n), item["name"])
		require.Contains(t, got, "module.redis.terraform_data.provisioning")
	}
	require.Contains(t, string(lockFile), fmt.Sprintf("version     = %q", servedVersion))
	require.Equal(t, w.infra, treeSnapshot(t, filepath.Join(w.dir, "infra")), "the component source was written to")
	require.NoError(t, filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tfisolate-tmp-") {
			return fmt.Errorf("temp file left in a workdir: %s", p)
		}
		return err
	}))
	scratch, err := os.ReadDir(filepath.Join(w.root, ".tmp"))
	if err == nil {
		var names []string
		for _, e := range scratch {
			names = append(names, e.Name())
		}
		require.Empty(t, names, "workdir scratch left in the root")
	}
}

// stateFile finds the one terraform.tfstate under an instance's home,
// outside the data dir (whose terraform.tfstate is backend settings).
func stateFile(t *testing.T, home string) string {
	t.Helper()
	var found []string
	require.NoError(t, filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".tfisolate" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() == "terraform.tfstate" {
			found = append(found, p)
		}
		return err
	}))
	require.Len(t, found, 1, "state files under %s", home)
	return found[0]
}

// requireOneCompletePackage checks that the cache holds exactly one
// package, that its files hash to the h1: of the zip the registry serves
// (no torn provider), that no temp files are left, and that a fresh Cache
// finds it without downloading again.
func (w *world) requireOneCompletePackage(t *testing.T) {
	t.Helper()
	var pkgs []string
	packages := filepath.Join(w.cache, ".pluginc", "packages") // pluginc's PackagesDir
	require.NoError(t, filepath.WalkDir(packages, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(packages, p)
		switch {
		case d.IsDir() && strings.Count(rel, string(filepath.Separator)) == 4:
			pkgs = append(pkgs, rel)
			return filepath.SkipDir
		}
		return nil
	}))
	want := filepath.Join(testprovider.Host, testprovider.Namespace, testprovider.Type, servedVersion, testprovider.Platform)
	require.Equal(t, []string{want}, pkgs, "packages in the cache")
	dir := filepath.Join(packages, want)

	var zip bytes.Buffer
	require.NoError(t, testprovider.PackageZip(&zip, w.prov.Binary.Path, servedVersion))
	zipPath := filepath.Join(t.TempDir(), "p.zip")
	require.NoError(t, os.WriteFile(zipPath, zip.Bytes(), 0o644))
	wantH1, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	require.NoError(t, err)
	gotH1, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, wantH1, gotH1, "the cached package differs from the served zip")

	tmp, err := os.ReadDir(filepath.Join(w.cache, ".pluginc", "tmp"))
	if err == nil {
		require.Empty(t, tmp, "temp files left in the cache")
	}

	before := w.prov.TotalDownloads()
	c, err := pluginc.Open(w.cache, pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(w.prov.HTTPClient()))
	require.NoError(t, err)
	prov, err := pluginc.ParseProvider(testprovider.Source)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := c.Ensure(ctx, pluginc.Requirement{Provider: prov, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, dir, got[0].Dir)
	require.Contains(t, got[0].Hashes, wantH1)
	require.Equal(t, before, w.prov.TotalDownloads(), "a fresh cache downloaded again")
	require.Zero(t, c.Stats().Downloads)
}
