package pluginc

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// The fleet tests run one mirror process (a Cache filled from the
// loopback registry, served by MirrorHandler over loopback HTTPS) and
// runner processes (each its own cache, the mirror its first source),
// all children of the test through internal/testkit/childproc.
const (
	roleMirror = "fleet-mirror"
	roleRunner = "fleet-runner"

	envRegAddr    = "FLEET_REGISTRY_ADDR"
	envRegHost    = "FLEET_REGISTRY_HOST"
	envRegCA      = "FLEET_REGISTRY_CA"
	envFleetCache = "FLEET_CACHE"
	envMirrorCert = "FLEET_MIRROR_CERT"   // the mirror writes its certificate there; runners trust it
	envMirrorURL  = "FLEET_MIRROR_URL"    // runners' first source
	envPauseAfter = "FLEET_PAUSE_AFTER"   // the mirror holds every archive response after this many bytes
	envFallback   = "FLEET_FALLBACK"      // "1": runners have the registry after the mirror
	envRunnerN    = "FLEET_GOROUTINES"    // Ensure calls at once in a runner
	envRunnerOut  = "FLEET_RUNNER_RESULT" // where a runner writes its fleetResult

	markerMirrorURL    = "MIRROR-URL "
	markerMirrorPaused = "MIRROR-PAUSED"
	markerDownloading  = "downloading provider"
)

// fleetResult is what a runner process reports.
type fleetResult struct {
	Locks    []string // LockFile of each Ensure call's packages
	Packages []Package
	Stats    Stats
	Errs     []string
}

// fleetChild is the body of the fleet's child processes.
func fleetChild(role string) error {
	switch role {
	case roleMirror:
		return runFleetMirror()
	case roleRunner:
		return runFleetRunner()
	}
	return fmt.Errorf("unknown child role %q", role)
}

func runFleetMirror() error {
	ca, err := os.ReadFile(os.Getenv(envRegCA))
	if err != nil {
		return err
	}
	hc, err := testregistry.NewClient(os.Getenv(envRegHost), os.Getenv(envRegAddr), ca)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := Open(os.Getenv(envFleetCache), WithSource(Registry()), WithHTTPClient(hc), WithLogger(log))
	if err != nil {
		return err
	}
	h := c.MirrorHandler()
	if s := os.Getenv(envPauseAfter); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		h = pauseArchives(h, n)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(os.Getenv(envMirrorCert), cert, 0o644); err != nil {
		return err
	}
	fmt.Println(markerMirrorURL + srv.URL + "/")
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent lets go
	srv.Close()
	return nil
}

// pauseArchives holds every archive response after its first n bytes,
// flushed, and says so on stdout: the test kills the process there.
func pauseArchives(h http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".zip") {
			w = &pausingWriter{ResponseWriter: w, left: n}
		}
		h.ServeHTTP(w, r)
	})
}

type pausingWriter struct {
	http.ResponseWriter
	left int64
}

func (p *pausingWriter) Write(b []byte) (int, error) {
	if int64(len(b)) < p.left {
		p.left -= int64(len(b))
		return p.ResponseWriter.Write(b)
	}
	_, _ = p.ResponseWriter.Write(b[:p.left])
	_ = http.NewResponseController(p.ResponseWriter).Flush()
	fmt.Println(markerMirrorPaused)
	select {} // until the test kills this process
}

func runFleetRunner() error {
	regCA, err := os.ReadFile(os.Getenv(envRegCA))
	if err != nil {
		return err
	}
	mirrorCert, err := os.ReadFile(os.Getenv(envMirrorCert))
	if err != nil {
		return err
	}
	hc, err := fleetClient(os.Getenv(envRegHost), os.Getenv(envRegAddr), regCA, mirrorCert)
	if err != nil {
		return err
	}
	srcs := []Source{NetworkMirror(os.Getenv(envMirrorURL))}
	if os.Getenv(envFallback) == "1" {
		srcs = append(srcs, Registry())
	}
	// The log goes to stdout: the parent sees when the download starts
	// and what failed over.
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	c, err := Open(os.Getenv(envFleetCache), WithSource(srcs...), WithHTTPClient(hc), WithLogger(log),
		WithRetries(1), WithRetryWait(time.Millisecond, time.Millisecond))
	if err != nil {
		return err
	}
	p, err := ParseProvider(testprovider.Source)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(os.Getenv(envRunnerN))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // start barrier: the parent closes stdin
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pkgs := make([][]Package, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { pkgs[i], errs[i] = c.Ensure(ctx, Requirement{Provider: p, Constraints: "~> 1.0"}) })
	}
	wg.Wait()
	var res fleetResult
	for i := range n {
		if errs[i] != nil {
			res.Errs = append(res.Errs, errs[i].Error())
			continue
		}
		res.Locks = append(res.Locks, string(LockFile(pkgs[i])))
		res.Packages = append(res.Packages, pkgs[i]...)
	}
	res.Stats = c.Stats()
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv(envRunnerOut), b, 0o644)
}

// fleet is a running mirror process and what runners need to reach it.
type fleet struct {
	reg        *registryFixture
	regCA      string
	mirror     *childproc.Proc
	mirrorURL  string
	mirrorCert string
}

func startFleetMirror(t *testing.T, reg *registryFixture, extra ...string) *fleet {
	t.Helper()
	f := &fleet{reg: reg, regCA: filepath.Join(t.TempDir(), "ca.pem"), mirrorCert: filepath.Join(t.TempDir(), "mirror.pem")}
	require.NoError(t, reg.srv.WriteCAFile(f.regCA))
	f.mirror = childproc.Start(t, roleMirror, childproc.WithEnv(append(f.regEnv(),
		envFleetCache+"="+t.TempDir(), envMirrorCert+"="+f.mirrorCert)...), childproc.WithEnv(extra...))
	line := f.mirror.Next(t)
	u, ok := strings.CutPrefix(line, markerMirrorURL)
	require.True(t, ok, "the mirror said %q", line)
	f.mirrorURL = u
	return f
}

func (f *fleet) regEnv() []string {
	return []string{envRegAddr + "=" + f.reg.srv.Addr(), envRegHost + "=" + f.reg.srv.Host(), envRegCA + "=" + f.regCA}
}

// runner starts a runner process on a cache of its own; it waits for its
// stdin to close before it calls Ensure from goroutines goroutines.
func (f *fleet) runner(t *testing.T, goroutines int, fallback bool) (p *childproc.Proc, cacheDir, result string) {
	t.Helper()
	cacheDir, result = t.TempDir(), filepath.Join(t.TempDir(), "result.json")
	fb := "0"
	if fallback {
		fb = "1"
	}
	p = childproc.Start(t, roleRunner, childproc.WithEnv(append(f.regEnv(),
		envFleetCache+"="+cacheDir, envMirrorCert+"="+f.mirrorCert, envMirrorURL+"="+f.mirrorURL,
		envFallback+"="+fb, envRunnerN+"="+strconv.Itoa(goroutines), envRunnerOut+"="+result)...))
	return p, cacheDir, result
}

func readFleetResult(t *testing.T, path string) fleetResult {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r fleetResult
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

// TestFleetMirror (issue 15 item 2): one mirror process and four runner
// processes with caches of their own, twelve Ensure calls at once in each,
// from a cold start: the registry counts one download for the whole
// fleet, every runner gets the registry's package and every lock file is
// the same.
func TestFleetMirror(t *testing.T) {
	const runners, instances = 4, 12
	begin := time.Now()
	reg := startRegistry(t, paddedSize, []string{"1.0.0", "1.1.0"}, testregistry.WithThrottle(200<<20))
	want, err := dirhash.HashZip(reg.zips["1.1.0"], dirhash.Hash1)
	require.NoError(t, err)
	f := startFleetMirror(t, reg)
	// The mirror's one upstream download is held until every runner has
	// started its own download from the mirror, so they all ask at once.
	gate := reg.srv.Hold()
	type run struct {
		p              *childproc.Proc
		cache, results string
	}
	var rs []run
	for range runners {
		p, cache, res := f.runner(t, instances, false)
		rs = append(rs, run{p, cache, res})
	}
	start := time.Now()
	for _, r := range rs {
		require.NoError(t, r.p.Stdin.Close())
	}
	<-gate.Started()
	for _, r := range rs {
		r.p.WaitLine(t, markerDownloading)
	}
	gate.Release()
	for _, r := range rs {
		require.NoError(t, r.p.Wait(), r.p.Output())
	}
	wall := time.Since(start)

	require.Equal(t, 1, reg.srv.Downloads(reg.key("1.1.0")), "one upstream download for the fleet")
	require.Equal(t, 1, reg.srv.TotalDownloads())
	var lock string
	for _, r := range rs {
		res := readFleetResult(t, r.results)
		require.Empty(t, res.Errs)
		require.Len(t, res.Locks, instances)
		require.Len(t, res.Packages, instances)
		require.Equal(t, int64(1), res.Stats.Downloads, "one download from the mirror per runner cache")
		for _, l := range res.Locks {
			if lock == "" {
				lock = l
			}
			require.Equal(t, lock, l, "every lock file of the fleet is the same")
		}
		for _, p := range res.Packages {
			require.Equal(t, "1.1.0", p.Version)
			require.Equal(t, filepath.Join(r.cache, current.packages, testprovider.Host, testprovider.Namespace, testprovider.Type, "1.1.0", testprovider.Platform), p.Dir)
		}
		h1, err := hashDir(res.Packages[0].Dir)
		require.NoError(t, err)
		require.Equal(t, want, h1, "the runner's package is the registry's")
	}
	require.Contains(t, lock, want)
	t.Logf("fleet: %d runner processes x %d Ensure calls, %d upstream download(s) (the registry's count); wall %s from the start barrier, %s with the registry, mirror and provider build",
		runners, instances, reg.srv.TotalDownloads(), wall.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// TestFleetMirrorKilledMidDownload: the mirror process is SIGKILLed while
// two runners read an archive from it (each response held after 1 MiB).
// The runner with the registry as its next source installs from it, and
// its log says the mirror failed; the runner with the mirror alone fails
// with an error naming the mirror and has no entry, no temp file, no
// torn dir.
func TestFleetMirrorKilledMidDownload(t *testing.T) {
	reg := startRegistry(t, paddedSize, []string{"1.0.0"})
	want, err := dirhash.HashZip(reg.zips["1.0.0"], dirhash.Hash1)
	require.NoError(t, err)
	f := startFleetMirror(t, reg, envPauseAfter+"="+strconv.Itoa(1<<20))
	alone, aloneCache, aloneRes := f.runner(t, 3, false)
	backed, backedCache, backedRes := f.runner(t, 3, true)
	require.NoError(t, alone.Stdin.Close())
	require.NoError(t, backed.Stdin.Close())
	f.mirror.WaitLine(t, markerMirrorPaused)
	f.mirror.WaitLine(t, markerMirrorPaused)
	require.Error(t, f.mirror.Kill(), "the mirror was killed, not done")
	require.NoError(t, alone.Wait(), alone.Output())
	require.NoError(t, backed.Wait(), backed.Output())

	res := readFleetResult(t, aloneRes)
	require.Len(t, res.Errs, 3)
	for _, e := range res.Errs {
		require.Contains(t, e, f.mirrorURL, "the error names the mirror")
	}
	require.Empty(t, res.Packages)
	ents, err := os.ReadDir(aloneCache)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing but the cache's own state dir")
	require.Equal(t, stateDir, ents[0].Name())
	tmp, err := os.ReadDir(filepath.Join(aloneCache, stateDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp, "no partial download left")
	c, err := Open(aloneCache)
	require.NoError(t, err)
	require.Empty(t, c.cachedProviders())

	res = readFleetResult(t, backedRes)
	require.Empty(t, res.Errs)
	require.Len(t, res.Packages, 3)
	h1, err := hashDir(res.Packages[0].Dir)
	require.NoError(t, err)
	require.Equal(t, want, h1)
	require.Equal(t, filepath.Join(backedCache, current.packages, testprovider.Host, testprovider.Namespace, testprovider.Type, "1.0.0", testprovider.Platform), res.Packages[0].Dir)
	require.Contains(t, backed.Output(), "source failed to deliver the package; trying the next source")
	require.Contains(t, backed.Output(), "network mirror "+f.mirrorURL)
	require.Equal(t, 2, reg.srv.Downloads(reg.key("1.0.0")), "the mirror's and the fallback's")
}
