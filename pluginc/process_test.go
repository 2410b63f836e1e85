package pluginc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// Child processes are this test binary re-executed by childproc with a
// role (see child). They talk to the parent's registry over loopback,
// trusting its CA from a file.
const (
	envAddr       = "PLUGINC_CHILD_REGISTRY_ADDR"
	envHost       = "PLUGINC_CHILD_REGISTRY_HOST"
	envCA         = "PLUGINC_CHILD_CA_FILE"
	envCache      = "PLUGINC_CHILD_CACHE"
	envResult     = "PLUGINC_CHILD_RESULT"
	envGoroutines = "PLUGINC_CHILD_GOROUTINES"

	markerUnpacking = "CHILD-UNPACKING"
	markerWaiting   = "waiting for another process"
)

// childResult is what a "race" child reports.
type childResult struct {
	Packages []Package
	Stats    Stats
}

// child is the body of the child processes the tests below start, by
// role.
func child(role string) error {
	pem, err := os.ReadFile(os.Getenv(envCA))
	if err != nil {
		return err
	}
	hc, err := testregistry.NewClient(os.Getenv(envHost), os.Getenv(envAddr), pem)
	if err != nil {
		return err
	}
	// The log goes to stdout so the parent can see when this process waits
	// for another one's package lock.
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := Open(os.Getenv(envCache), WithSource(Registry()), WithHTTPClient(hc), WithLogger(log))
	if err != nil {
		return err
	}
	p, err := ParseProvider(testprovider.Source)
	if err != nil {
		return err
	}
	req := Requirement{Provider: p, Constraints: "~> 1.0"}
	ctx := context.Background()

	switch role {
	case "race":
		// Start barrier: the parent closes stdin once every child is up.
		_, _ = io.Copy(io.Discard, os.Stdin)
		n := 8
		fmt.Sscan(os.Getenv(envGoroutines), &n)
		res := make([][]Package, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { res[i], errs[i] = c.Ensure(ctx, req) })
		}
		wg.Wait()
		var out childResult
		for i := range n {
			if errs[i] != nil {
				return errs[i]
			}
			out.Packages = append(out.Packages, res[i]...)
		}
		out.Stats = c.Stats()
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		return os.WriteFile(os.Getenv(envResult), b, 0o644)
	case "ensure":
		_, err := c.Ensure(ctx, req)
		return err
	case "unpack":
		c.testHookUnpacking = func() {
			fmt.Println(markerUnpacking)
			select {} // until killed
		}
		_, err := c.Ensure(ctx, req)
		return err
	}
	return fmt.Errorf("unknown child role %q", role)
}

// startChild starts a child in role on the cache at cacheDir, talking to
// f's registry, with extra environment.
func startChild(t *testing.T, f *registryFixture, role, cacheDir string, extra ...string) *childproc.Proc {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, f.srv.WriteCAFile(ca))
	env := append([]string{envAddr + "=" + f.srv.Addr(), envHost + "=" + f.srv.Host(), envCA + "=" + ca, envCache + "=" + cacheDir}, extra...)
	return childproc.Start(t, role, childproc.WithEnv(env...))
}

// waitChild waits for the child to exit and fails the test if it failed.
func waitChild(t *testing.T, c *childproc.Proc) {
	t.Helper()
	err := c.Wait()
	require.NoError(t, err, "child output:\n%s", c.Output())
}

// killChild SIGKILLs the child, which must still be running, and reaps
// it.
func killChild(t *testing.T, c *childproc.Proc) {
	t.Helper()
	require.NoError(t, c.Cmd.Process.Kill())
	_ = c.Kill()
}

const paddedSize = 20 << 20

// TestProcessesDownloadOnce: 4 processes x 8 goroutines, empty cache, one
// download, everyone gets the same package.
func TestProcessesDownloadOnce(t *testing.T) {
	const procs, goroutines = 4, 8
	f := startRegistry(t, paddedSize, []string{"1.0.0", "1.1.0"}, testregistry.WithThrottle(200<<20))
	require.Greater(t, fileSize(t, f.zips["1.1.0"]), int64(paddedSize))
	cacheDir := t.TempDir()
	// Hold the download until every other process is provably waiting for
	// the downloader's package lock.
	gate := f.srv.Hold()

	var children []*childproc.Proc
	var results []string
	for i := range procs {
		res := filepath.Join(t.TempDir(), fmt.Sprintf("result-%d.json", i))
		results = append(results, res)
		children = append(children, startChild(t, f, "race", cacheDir, envResult+"="+res, fmt.Sprintf("%s=%d", envGoroutines, goroutines)))
	}
	for _, c := range children {
		require.NoError(t, c.Stdin.Close()) // start barrier
	}
	<-gate.Started()
	waiting := make(chan struct{}, procs)
	for _, c := range children {
		go func() {
			for {
				l, ok := c.ReadLine()
				if !ok {
					return
				}
				if strings.Contains(l, markerWaiting) {
					waiting <- struct{}{}
					return
				}
			}
		}()
	}
	for range procs - 1 {
		<-waiting
	}
	gate.Release()
	for _, c := range children {
		waitChild(t, c)
	}

	require.Equal(t, 1, f.srv.Downloads(f.key("1.1.0")))
	require.Equal(t, 1, f.srv.TotalDownloads())
	var all []Package
	var total Stats
	for _, r := range results {
		b, err := os.ReadFile(r)
		require.NoError(t, err)
		var cr childResult
		require.NoError(t, json.Unmarshal(b, &cr))
		all = append(all, cr.Packages...)
		total.Downloads += cr.Stats.Downloads
		total.Hits += cr.Stats.Hits
		total.Waits += cr.Stats.Waits
	}
	require.Len(t, all, procs*goroutines)
	for _, p := range all {
		require.Equal(t, all[0], p)
	}
	require.Equal(t, "1.1.0", all[0].Version)
	require.Equal(t, filepath.Join(cacheDir, current.packages, testprovider.Host, testprovider.Namespace, testprovider.Type, "1.1.0", testprovider.Platform), all[0].Dir)
	h1, err := hashDir(all[0].Dir)
	require.NoError(t, err)
	require.Contains(t, all[0].Hashes, h1)
	require.Equal(t, int64(1), total.Downloads)
	require.Equal(t, int64(procs*goroutines-1), total.Hits)
	require.GreaterOrEqual(t, total.Waits, int64(procs-1))
}

// TestKilledWhileDownloading: a process SIGKILLed mid-download leaves no
// entry; the next Ensure installs and sweeps the leftovers.
func TestKilledWhileDownloading(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	cacheDir := t.TempDir()
	gate := f.srv.Hold()
	ch := startChild(t, f, "ensure", cacheDir)
	<-gate.Started()
	killChild(t, ch)
	gate.Release()

	requireKilledLeftovers(t, f, cacheDir, ".zip")
}

// TestKilledWhileUnpacking: the same, killed after unpacking has begun.
func TestKilledWhileUnpacking(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	cacheDir := t.TempDir()
	ch := startChild(t, f, "unpack", cacheDir)
	ch.WaitLine(t, markerUnpacking)
	killChild(t, ch)

	requireKilledLeftovers(t, f, cacheDir, ".d")
}

func requireKilledLeftovers(t *testing.T, f *registryFixture, cacheDir, leftoverSuffix string) {
	t.Helper()
	tmp, err := os.ReadDir(filepath.Join(cacheDir, stateDir, "tmp"))
	require.NoError(t, err)
	found := false
	for _, e := range tmp {
		found = found || strings.HasSuffix(e.Name(), leftoverSuffix)
	}
	require.True(t, found, "the killed process should have left a %s temp entry", leftoverSuffix)
	c := f.open(t, cacheDir) // sweeps the leftovers: the dead process holds no lock
	require.Empty(t, c.cachedProviders(), "no entry may be visible after a kill")
	_, err = os.Stat(filepath.Join(cacheDir, testprovider.Host))
	require.True(t, os.IsNotExist(err), "nothing under the package tree")

	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	h1, err := hashDir(pkgs[0].Dir)
	require.NoError(t, err)
	require.Contains(t, pkgs[0].Hashes, h1)
	tmp, err = os.ReadDir(filepath.Join(cacheDir, stateDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "leftovers must be swept")
	require.Equal(t, 2, f.srv.Downloads(f.key("1.1.0")))
}

// TestCanceledWhileDownloading: a cancelled Ensure returns the context's
// error and leaves nothing behind, not even temp files.
func TestCanceledWhileDownloading(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	gate := f.srv.Hold()
	c := f.open(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.Ensure(ctx, Requirement{Provider: f.p})
		errc <- err
	}()
	<-gate.Started()
	cancel()
	err := <-errc
	gate.Release()
	require.ErrorIs(t, err, context.Canceled)
	requireEmptyCache(t, c)
}

// TestOpenSweepsOrphans: temp files whose package lock is free are removed
// by Open; those of a package being installed right now are left alone.
func TestOpenSweepsOrphans(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	require.NoError(t, err)
	v, err := parseVersion("1.0.0")
	require.NoError(t, err)
	p := Provider{Hostname: "example.test", Namespace: "acme", Type: "demo"}
	busy := Provider{Hostname: "example.test", Namespace: "acme", Type: "busy"}
	tmp := filepath.Join(dir, stateDir, "tmp")
	orphan := filepath.Join(tmp, pkgKey(PackageID{p, v.String(), "linux_amd64"})+".12345.zip")
	live := filepath.Join(tmp, pkgKey(PackageID{busy, v.String(), "linux_amd64"})+".12346.zip")
	for _, f := range []string{orphan, live} {
		require.NoError(t, os.WriteFile(f, []byte("partial"), 0o600))
	}
	require.NoError(t, os.WriteFile(c.lockPath(PackageID{p, v.String(), "linux_amd64"}), nil, 0o600))
	// Another "process" (another open file description) holds busy's lock.
	lk := flock.New(c.lockPath(PackageID{busy, v.String(), "linux_amd64"}))
	ok, err := lk.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	defer lk.Unlock()

	_, err = Open(dir)
	require.NoError(t, err)
	_, err = os.Stat(orphan)
	require.True(t, os.IsNotExist(err), "orphan must be swept")
	_, err = os.Stat(live)
	require.NoError(t, err, "a locked package's temp file must be left alone")
}

// TestKilledWhileRepairing: a process SIGKILLed while it reinstalls a
// damaged entry (its record deleted) leaves no entry anyone would use;
// the next Ensure reinstalls and sweeps the leftovers.
func TestKilledWhileRepairing(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	cacheDir := t.TempDir()
	req := Requirement{Provider: f.p, Constraints: "~> 1.0"}
	pkgs, err := f.open(t, cacheDir).Ensure(context.Background(), req)
	require.NoError(t, err)
	v, _ := parseVersion("1.1.0")
	c := f.open(t, cacheDir)
	require.NoError(t, os.Remove(c.metaPath(PackageID{f.p, v.String(), testprovider.Platform})))

	ch := startChild(t, f, "unpack", cacheDir)
	ch.WaitLine(t, markerUnpacking)
	killChild(t, ch)
	_, err = os.Stat(pkgs[0].Dir)
	require.True(t, os.IsNotExist(err), "the damaged entry was removed before the reinstall began")

	c = f.open(t, cacheDir)
	require.Empty(t, c.cachedProviders(), "no entry may be visible after a kill")
	again, err := c.Ensure(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, pkgs, again)
	require.Equal(t, Stats{Downloads: 1, Bytes: c.Stats().Bytes}, c.Stats(), "an absent entry: a plain install")
	tmp, err := os.ReadDir(filepath.Join(cacheDir, stateDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "leftovers must be swept")
	require.Equal(t, 3, f.srv.Downloads(f.key("1.1.0")))
}
