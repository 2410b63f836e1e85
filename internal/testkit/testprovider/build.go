package testprovider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Binary is a built provider executable. It is shared by every test of the
// test binary: treat the file as read-only.
type Binary struct {
	Path   string // absolute path of the executable
	Size   int64  // bytes, padding included
	SHA256 string // hex SHA-256 of the file
}

// Option changes how Build builds the provider.
type Option func(*buildConfig)

type buildConfig struct {
	padding int64
}

// WithPadding appends n deterministic, incompressible bytes to the built
// executable (n <= 0 means none). Executables still run with trailing data;
// the padding only makes copies and downloads realistically slow and torn
// copies detectable.
func WithPadding(n int64) Option {
	return func(c *buildConfig) {
		if n > 0 {
			c.padding = n
		}
	}
}

type buildResult struct {
	once sync.Once
	bin  *Binary
	err  error
}

// builds is the per-test-binary build cache. It is package state on purpose:
// the whole point is that every test, in any goroutine, reuses one build.
var builds struct {
	mu      sync.Mutex
	dir     string
	packer  string // path of the tfitest-pack helper, once built
	results map[buildConfig]*buildResult
	zips    map[zipKey]*zipResult
}

// Build returns the provider built with the given options, building it on
// first use. A build failure fails the calling test.
func Build(tb TB, opts ...Option) *Binary {
	tb.Helper()
	var cfg buildConfig
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := build(cfg)
	if err != nil {
		tb.Fatalf("testprovider: %v", err)
	}
	return bin
}

// Cleanup removes every file Build and Zip created. Call it from TestMain
// after m.Run; a later Build starts afresh.
func Cleanup() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	builds.dir, builds.packer, builds.results, builds.zips = "", "", nil, nil
}

func sharedDir() (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		d, err := os.MkdirTemp("", "tfitest-provider-")
		if err != nil {
			return "", fmt.Errorf("create build dir: %w", err)
		}
		builds.dir = d
	}
	return builds.dir, nil
}

func build(cfg buildConfig) (*Binary, error) {
	builds.mu.Lock()
	if builds.results == nil {
		builds.results = map[buildConfig]*buildResult{}
	}
	r, ok := builds.results[cfg]
	if !ok {
		r = &buildResult{}
		builds.results[cfg] = r
	}
	builds.mu.Unlock()

	r.once.Do(func() {
		if cfg.padding == 0 {
			r.bin, r.err = compile()
			return
		}
		base, err := build(buildConfig{})
		if err != nil {
			r.err = err
			return
		}
		r.bin, r.err = pad(base, cfg.padding)
	})
	return r.bin, r.err
}

func compile() (*Binary, error) {
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	outDir := filepath.Join(dir, "plain")
	bin, packer, err := compileInto(outDir)
	if err != nil {
		return nil, err
	}
	builds.mu.Lock()
	builds.packer = packer
	builds.mu.Unlock()
	return bin, nil
}

// BuildTo builds the provider into dir, for programs that are not tests (the
// examples serve it from a loopback registry). dir must not hold anything
// else; an existing build there is reused when it is complete.
func BuildTo(dir string, opts ...Option) (*Binary, error) {
	var cfg buildConfig
	for _, o := range opts {
		o(&cfg)
	}
	name := "terraform-provider-tfitest" + exeSuffix
	final := filepath.Join(dir, fmt.Sprintf("padded-%d", cfg.padding), name)
	if bin, err := describe(final); err == nil {
		return bin, nil
	}
	plain, _, err := compileInto(filepath.Join(dir, "plain"))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("build provider: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := padTo(filepath.Join(tmp, name), plain, cfg.padding); err != nil {
		return nil, err
	}
	// Renaming the directory publishes the binary whole: a run killed
	// while padding leaves only a temp dir, never a short final file.
	if err := os.Rename(tmp, filepath.Dir(final)); err != nil {
		return nil, fmt.Errorf("build provider: %w", err)
	}
	return describe(final)
}

// compileInto runs go build for the provider and the packer into outDir.
func compileInto(outDir string) (bin *Binary, packer string, err error) {
	srcDir, err := packageDir()
	if err != nil {
		return nil, "", err
	}
	goBin, err := goTool()
	if err != nil {
		return nil, "", err
	}
	// -trimpath and -buildvcs=false make the build reproducible and keep it
	// independent of the checkout's git state; -s -w strip symbols, as
	// provider releases do. The packer is built alongside: see Binary.Zip.
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", outDir+string(filepath.Separator),
		"./cmd/terraform-provider-tfitest", "./cmd/tfitest-pack")
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=readonly", "GOWORK=off")
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("go build the provider in %s: %w\n%s", srcDir, err, outBuf.String())
	}
	bin, err = describe(filepath.Join(outDir, "terraform-provider-tfitest"+exeSuffix))
	return bin, filepath.Join(outDir, "tfitest-pack"+exeSuffix), err
}

// packageDir finds this package's source directory, from which the build
// runs so it works whatever the calling test's working directory is.
func packageDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "cmd", "terraform-provider-tfitest", "main.go")); err == nil {
			return dir, nil
		}
	}
	// Built with -trimpath: ask the go command where the module is.
	goBin, err := goTool()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("find the module root: go env GOMOD gave %q (%v)", gomod, err)
	}
	return filepath.Join(filepath.Dir(gomod), "internal", "testkit", "testprovider"), nil
}

func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("find the go command: not on PATH and GOROOT is not set")
}

func describe(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hash provider binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("hash provider binary %s: %w", path, err)
	}
	return &Binary{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
