package runner

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// childConfig tells a re-executed test binary what to run.
type childConfig struct {
	TF, Root, Cache string
	Spec            workdir.Spec
	Command         string // "apply" (the default) or "apply-plan"
}

// childResult is what a child prints on its last stdout line.
type childResult struct {
	Status   string
	LockWait int64
	Holder   *workdir.Holder // Result.InstanceLock
	Err      string
}

// childConfigEnv carries a child's config, as JSON: a childConfig, a
// memoryChild, a backendsChildConfig, a fleetMirrorConfig, a
// fleetRunnerConfig, a modServerConfig or a modRunnerConfig, by role.
const childConfigEnv = "TFISOLATE_RUNNER_CHILD_CONFIG"

// childTimeout bounds every child of these tests, past the children's own
// bounds (the backends child's 4-minute run, runIn's 5 minutes): it only
// keeps a broken test from hanging.
const childTimeout = 6 * time.Minute

// child is the body of a re-executed test binary acting as another OS
// process (see childproc), by role.
func child(role string) error {
	switch role {
	case "apply":
		return applyChild()
	case memoryChildRole:
		return runMemoryChild()
	case backendsChildRole:
		return backendsChild()
	case fleetMirrorRole:
		return fleetMirrorChild()
	case fleetRunnerRole:
		return fleetRunnerChild()
	case modServerRole:
		return modServerChild()
	case modRunnerRole:
		return modRunnerChild()
	}
	return fmt.Errorf("unknown child role %q", role)
}

// readChildConfig decodes the child's config, from childConfigEnv, into
// cfg.
func readChildConfig(cfg any) error {
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), cfg); err != nil {
		return fmt.Errorf("bad child config: %w", err)
	}
	return nil
}

// openChildStores opens a child's workdir root and plugin cache.
func openChildStores(root, cache string, opts ...workdir.Option) (*workdir.Manager, *pluginc.Cache, error) {
	wd, err := workdir.New(root, opts...)
	if err != nil {
		return nil, nil, err
	}
	c, err := pluginc.Open(cache)
	if err != nil {
		return nil, nil, err
	}
	return wd, c, nil
}

// applyChild runs the childConfig's command over its one unit and prints
// a childResult on its last stdout line.
func applyChild() error {
	var cfg childConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	// The workdir manager logs to stderr, where the parent watches for the
	// moment this process starts waiting for the instance lock.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	wd, cache, err := openChildStores(cfg.Root, cfg.Cache, workdir.WithLogger(log))
	if err != nil {
		return err
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF))
	if err != nil {
		return err
	}
	cmd := Apply
	if cfg.Command == ApplyPlan.String() {
		cmd = ApplyPlan
	}
	rep, err := r.Run(context.Background(), cmd, Unit{Workdir: cfg.Spec})
	res := childResult{}
	if rep != nil {
		res.Status = rep.Results[0].Status.String()
		res.LockWait = int64(rep.Results[0].LockWait)
		res.Holder = rep.Results[0].InstanceLock
	}
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Printf("\n%s\n", b)
	return err
}

// backendsChildRole makes the test binary a second CI agent (see
// backendsChild).
const backendsChildRole = "backends"

// backendsChildResultPrefix starts the child's stdout line with its results.
const backendsChildResultPrefix = "backends-child-results: "

type backendsChildUnit struct {
	Spec workdir.Spec
	Env  map[string]string
}

type backendsChildConfig struct {
	TF, Root, Cache string
	LockTimeout     time.Duration
	Units           []backendsChildUnit
}

type backendsChildResult struct {
	Unit, Status, Err, Log string
	LockWait               time.Duration
}

// backendsChild plays a second CI agent: it applies the units of its
// backendsChildConfig with its own workdir root and plugin cache, writes
// the combined output to stderr (where the parent watches it) and prints
// one line of results.
func backendsChild() error {
	var cfg backendsChildConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	wd, cache, err := openChildStores(cfg.Root, cfg.Cache)
	if err != nil {
		return err
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF),
		WithLockTimeout(cfg.LockTimeout), WithOutput(os.Stderr))
	if err != nil {
		return err
	}
	units := make([]Unit, len(cfg.Units))
	for i, u := range cfg.Units {
		units[i] = Unit{Workdir: u.Spec, Env: u.Env}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := r.Run(ctx, Apply, units...)
	if rep == nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	var out []backendsChildResult
	for _, res := range rep.Results {
		cr := backendsChildResult{Unit: res.Unit, Status: res.Status.String(), Log: res.Log, LockWait: res.LockWait}
		if res.Err != nil {
			cr.Err = res.Err.Error()
		}
		out = append(out, cr)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Printf("\n%s%s\n", backendsChildResultPrefix, b)
	return nil
}

// The fleet children (issue 15 item 2): one mirror process serving a
// plugin cache filled from the loopback registry, and runner processes,
// each with its own workdir root and plugin cache whose first source is
// that mirror. The tests are in fleetmirror_unix_test.go.
const (
	fleetMirrorRole         = "fleet-mirror"
	fleetRunnerRole         = "fleet-runner"
	fleetMirrorURLPrefix    = "fleet-mirror-url: "
	fleetMirrorPaused       = "fleet-mirror-paused"
	fleetRunnerResultPrefix = "fleet-runner-result: "
)

// fleetRegistry is where a child reaches the loopback registry: its host
// name, its loopback address and the file with its CA certificate.
type fleetRegistry struct{ Host, Addr, CAFile string }

type fleetMirrorConfig struct {
	Registry fleetRegistry
	Cache    string
	CertFile string // where the mirror writes its certificate, for the runners
	// PauseAfter > 0 holds every archive response after that many bytes,
	// flushed, and says fleetMirrorPaused on stdout: the test kills the
	// mirror there.
	PauseAfter int64
}

type fleetRunnerConfig struct {
	TF          string
	Root, Cache string
	MirrorURL   string
	MirrorCert  string
	// Fallback, when set, is the runner's next source after the mirror;
	// without it the mirror is its only source.
	Fallback *fleetRegistry
	Units    []workdir.Spec
}

// fleetRunnerResult is the line a runner prints when its Run is over.
type fleetRunnerResult struct {
	Succeeded int
	Errs      []string       // each failed unit's error
	Locks     map[string]int // sha256 of an instance's lock file: how many instances have it
	Lock      string         // the lock file of the first instance that has one
	Downloads int64          // the runner cache's downloads (Stats)
}

// fleetMirrorChild serves a plugin cache whose only source is the
// loopback registry with MirrorHandler over loopback HTTPS, prints its
// URL and serves until its stdin closes.
func fleetMirrorChild() error {
	var cfg fleetMirrorConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	ca, err := os.ReadFile(cfg.Registry.CAFile)
	if err != nil {
		return err
	}
	hc, err := testregistry.NewClient(cfg.Registry.Host, cfg.Registry.Addr, ca)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := pluginc.Open(cfg.Cache, pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc), pluginc.WithLogger(log))
	if err != nil {
		return err
	}
	h := c.MirrorHandler()
	if cfg.PauseAfter > 0 {
		h = pauseArchives(h, cfg.PauseAfter)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(cfg.CertFile, cert, 0o644); err != nil {
		return err
	}
	fmt.Println(fleetMirrorURLPrefix + srv.URL + "/")
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent lets go
	return nil
}

// pauseArchives holds every archive response after its first n bytes,
// flushed, and says so on stdout, so the test kills the mirror while a
// runner is reading an archive, without timing.
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
	fmt.Println(fleetMirrorPaused)
	select {} // until the test kills this process
}

// fleetClient is an HTTP client that trusts the certificates in pems,
// sends the registry's host to its loopback address and dials nothing
// but loopback.
func fleetClient(reg *fleetRegistry, pems ...[]byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	for _, b := range pems {
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("no certificate in %q", b)
		}
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, _, err := net.SplitHostPort(addr)
			switch {
			case err != nil:
				return nil, err
			case reg != nil && h == reg.Host:
				addr = reg.Addr
			case h != "127.0.0.1":
				return nil, fmt.Errorf("refusing to dial %s: not loopback", addr)
			}
			return d.DialContext(ctx, network, addr)
		},
	}}, nil
}

// fleetRunnerChild applies its units, all at once, with a workdir root
// and plugin cache of its own whose first source is the mirror, once its
// stdin closes (the start barrier), and prints a fleetRunnerResult. The
// cache logs to stdout, where the parent sees the download start and any
// failover.
func fleetRunnerChild() error {
	var cfg fleetRunnerConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	mirrorCert, err := os.ReadFile(cfg.MirrorCert)
	if err != nil {
		return err
	}
	pems := [][]byte{mirrorCert}
	srcs := []pluginc.Source{pluginc.NetworkMirror(cfg.MirrorURL)}
	if cfg.Fallback != nil {
		ca, err := os.ReadFile(cfg.Fallback.CAFile)
		if err != nil {
			return err
		}
		pems = append(pems, ca)
		srcs = append(srcs, pluginc.Registry())
	}
	hc, err := fleetClient(cfg.Fallback, pems...)
	if err != nil {
		return err
	}
	wd, err := workdir.New(cfg.Root)
	if err != nil {
		return err
	}
	// One retry, at once: a killed mirror is not worth waiting for.
	cache, err := pluginc.Open(cfg.Cache, pluginc.WithSource(srcs...), pluginc.WithHTTPClient(hc),
		pluginc.WithLogger(slog.New(slog.NewTextHandler(os.Stdout, nil))),
		pluginc.WithRetries(1), pluginc.WithRetryWait(time.Millisecond, time.Millisecond))
	if err != nil {
		return err
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF), WithParallelism(len(cfg.Units)))
	if err != nil {
		return err
	}
	units := make([]Unit, len(cfg.Units))
	for i, s := range cfg.Units {
		units[i] = Unit{Workdir: s}
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // start barrier: the parent closes stdin
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := r.Run(ctx, Apply, units...)
	if rep == nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	res := fleetRunnerResult{Locks: map[string]int{}, Downloads: cache.Stats().Downloads}
	for _, u := range rep.Results {
		if u.Status == Succeeded {
			res.Succeeded++
		} else {
			res.Errs = append(res.Errs, fmt.Sprintf("%s: %s: %v", u.Unit, u.Status, u.Err))
		}
	}
	for _, s := range cfg.Units {
		lock, err := instanceLockFile(wd, s)
		if err != nil {
			return err
		}
		if lock == nil {
			continue
		}
		sum := sha256.Sum256(lock)
		res.Locks[hex.EncodeToString(sum[:])]++
		if res.Lock == "" {
			res.Lock = string(lock)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Printf("\n%s%s\n", fleetRunnerResultPrefix, b)
	return nil
}

// instanceLockFile returns the lock file in the instance's workdir, nil
// if it has none.
func instanceLockFile(wd *workdir.Manager, s workdir.Spec) ([]byte, error) {
	home, err := wd.Home(s.Stack, s.Instance)
	if err != nil {
		return nil, err
	}
	var found []byte
	err = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == lockFileName && found == nil {
			found, err = os.ReadFile(p)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // an instance that never got a workdir
		}
		return err
	})
	return found, err
}
