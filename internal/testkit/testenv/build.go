package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// A Build is an engine release the suite builds from its own Go module,
// once per machine, for the engine matrix (see Matrix).
type Build struct {
	// Kind and Version name the release ("1.16.0", no "v").
	Kind    engine.Kind
	Version string
	// Lacks lists the state backends the build leaves out (see
	// Terraform116); a test that needs one skips under this build.
	Lacks []string

	module  string // the Go module
	pkg     string // the main package inside it
	ldflags string
	// patch, when set, makes a writable copy of the module buildable; the
	// build then runs in that copy instead of the read-only module cache.
	patch func(src string) error
}

// The builds of the engine matrix. Tofu110 is the oldest OpenTofu the SDK
// supports (TofuVersion); Tofu112 and Terraform116 are the newest releases
// the Go module proxy serves whole or nearly so. The oldest Terraform is
// the one on PATH (Terraform).
var (
	Tofu110 = tofuBuild(TofuVersion)
	Tofu112 = tofuBuild("1.12.6")
	// Terraform116 is Terraform 1.16.0 without the state backends whose
	// code the module proxy's zip of Terraform leaves out (they are
	// nested modules that Terraform's go.mod replaces with local dirs):
	// local, http, inmem, remote and cloud are in.
	Terraform116 = terraformBuild("1.16.0")
	// Terraform115 is the release that introduced module sources and
	// versions from variables: outside the matrix, the early-evaluation
	// fixtures run under it too.
	Terraform115 = terraformBuild("1.15.0")
)

// terraformBuild is Terraform's release build at version, from the
// proxy's zip with the nested backends dropped (dropNestedBackends).
func terraformBuild(version string) Build {
	return Build{
		Kind: engine.Terraform, Version: version,
		Lacks:   droppedBackends,
		module:  "github.com/hashicorp/terraform",
		pkg:     ".",
		ldflags: "-s -w -X github.com/hashicorp/terraform/version.dev=no",
		patch:   dropNestedBackends,
	}
}

// Builds returns every build the suite uses: the engine matrix's, oldest
// first, and Terraform115.
func Builds() []Build { return []Build{Tofu110, Terraform116, Tofu112, Terraform115} }

// Engine returns the build as an Engine named after it, building it first
// when the cache has none (see Binary for the skip rules).
func (b Build) Engine(tb testing.TB) Engine {
	tb.Helper()
	return Engine{Kind: b.Kind, Path: b.Binary(tb), Name: b.Name(), Lacks: b.Lacks}
}

// tofuBuild is OpenTofu's release build at version: its module is whole
// on the module proxy, so it builds in the module cache as it is.
func tofuBuild(version string) Build {
	return Build{
		Kind: engine.OpenTofu, Version: version,
		module: tofuModule,
		pkg:    "./cmd/tofu",
		// The flags of OpenTofu's own release build (.goreleaser.yaml):
		// without version.dev=no the binary calls itself "VERSION-dev".
		ldflags: "-s -w -X github.com/opentofu/opentofu/version.dev=no",
	}
}

// Name is the build's name in test names: "terraform-1.16.0".
func (b Build) Name() string { return string(b.Kind) + "-" + b.Version }

// CacheDir returns the directory the build is made in and kept:
// os.UserCacheDir()/tfisolate/tofu/vVERSION for OpenTofu (where the first
// releases of this suite kept it), .../terraform-src/vVERSION for
// Terraform (terraform/ holds the releases engine.Find installs).
func (b Build) CacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%s build cache: %w", b.Name(), err)
	}
	sub := "tofu"
	if b.Kind == engine.Terraform {
		sub = "terraform-src"
	}
	return filepath.Join(c, "tfisolate", sub, "v"+b.Version), nil
}

// Ensure returns the path of the cached binary, building it first when
// the cache has none, and the reason as an error when it cannot. ctx
// bounds the wait for another process's build and the build itself
// (BuildTimeout at most).
func (b Build) Ensure(ctx context.Context) (string, error) {
	dir, err := b.CacheDir()
	if err != nil {
		return "", err
	}
	return b.build(ctx, dir, nil)
}

// BuildTimeout bounds one build, including the wait for another process
// that is building it: a cold build compiles all of the engine, about six
// minutes on two idle cores and twice that beside a running suite.
const BuildTimeout = 30 * time.Minute

// TofuBuildTimeout is BuildTimeout, under the name the first release of
// this package gave it.
const TofuBuildTimeout = BuildTimeout

var (
	builtMu sync.Mutex
	built   = map[string]*builtOnce{}
)

type builtOnce struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the build's binary (see Ensure), once per
// test binary. When it cannot be had the test is skipped with the reason,
// except under CI=true, where it fails.
func (b Build) Binary(tb testing.TB) string {
	tb.Helper()
	builtMu.Lock()
	o := built[b.Name()]
	if o == nil {
		o = &builtOnce{}
		built[b.Name()] = o
	}
	builtMu.Unlock()
	o.once.Do(func() { o.path, o.err = b.Ensure(context.Background()) })
	if o.err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is required under CI=true: %v", b.Name(), o.err)
		}
		tb.Skipf("skipping: %s %s is not available (%v); it is built once per machine with the go command from module %s@v%s (the module proxy must be reachable)",
			b.Kind.Product(), b.Version, o.err, b.module, b.Version)
	}
	return o.path
}

// build makes dir/EXECUTABLE if it is not there yet and returns its path.
// Concurrent builds (goroutines, test binaries) share one: an exclusive
// flock in dir. The build goes to a temp dir that is renamed into place
// only after the binary reported the expected kind and version, so a
// killed build leaves nothing a later run would use. onBuild, when not
// nil, is told the temp dir once `go build` has started (tests kill the
// build then).
func (b Build) build(ctx context.Context, dir string, onBuild func(tmp string)) (string, error) {
	final := filepath.Join(dir, b.Kind.Executable())
	if isExecutable(final) {
		sweepIdle(dir)
		return final, nil
	}
	fail := func(err error) (string, error) { return "", fmt.Errorf("build %s: %w", b.Name(), err) }
	ctx, cancel := context.WithTimeout(ctx, BuildTimeout)
	defer cancel()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	lk := flock.New(filepath.Join(dir, ".build.lock"))
	ok, err := lk.TryLockContext(ctx, 250*time.Millisecond)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("not acquired")
		}
		return fail(fmt.Errorf("lock %s: %w", lk.Path(), err))
	}
	defer lk.Unlock()
	if isExecutable(final) { // another process built it while we waited
		return final, nil
	}
	sweep(dir)
	tmp, err := os.MkdirTemp(dir, ".tmp-build-")
	if err != nil {
		return fail(err)
	}
	defer func() {
		_ = makeWritable(tmp)
		_ = os.RemoveAll(tmp)
	}()

	goBin, err := goTool()
	if err != nil {
		return fail(err)
	}
	modDir, err := downloadModule(ctx, goBin, tmp, b.module, b.Version)
	if err != nil {
		return fail(err)
	}
	if b.patch != nil {
		src := filepath.Join(tmp, "src")
		// Writable, as os.CopyFS makes files (the module cache's are not).
		if err := os.CopyFS(src, os.DirFS(modDir)); err != nil {
			return fail(fmt.Errorf("copy %s: %w", modDir, err))
		}
		if err := b.patch(src); err != nil {
			return fail(fmt.Errorf("patch %s@v%s: %w", b.module, b.Version, err))
		}
		modDir = src
	}
	out := filepath.Join(tmp, b.Kind.Executable())
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags="+b.ldflags, "-o", out, b.pkg)
	cmd.Dir = modDir
	cmd.Env = goEnv()
	started := func() {
		if onBuild != nil {
			onBuild(tmp)
		}
	}
	if msg, err := runCapture(cmd, started); err != nil {
		return fail(fmt.Errorf("go build %s in %s: %w\n%s", b.pkg, modDir, err, msg))
	}
	info, err := engine.Detect(ctx, out)
	if err != nil {
		return fail(fmt.Errorf("the built binary: %w", err))
	}
	if info.Kind != b.Kind || info.Version.String() != b.Version {
		return fail(fmt.Errorf("the built binary is %s, want %s %s", info, b.Kind.Product(), b.Version))
	}
	if err := os.Rename(out, final); err != nil {
		return fail(err)
	}
	return final, nil
}

// sweep removes the temp dirs of builds that were killed. The caller
// holds dir's lock: temp dirs are only made under it, so any there now
// belong to a build that died (a test binary killed by its -timeout
// leaves its go command running on: that build's leftover is removed by
// the next build or Ensure that finds the lock free).
func sweep(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, ".tmp-build-*"))
	for _, o := range old {
		_ = makeWritable(o)
		_ = os.RemoveAll(o)
	}
}

// sweepIdle sweeps dir when its lock is free, and does nothing (never
// waits) while a build holds it.
func sweepIdle(dir string) {
	if old, _ := filepath.Glob(filepath.Join(dir, ".tmp-build-*")); len(old) == 0 {
		return
	}
	lk := flock.New(filepath.Join(dir, ".build.lock"))
	if ok, err := lk.TryLock(); err == nil && ok {
		sweep(dir)
		_ = lk.Unlock()
	}
}

// makeWritable gives the owner write permission on every dir under root,
// so that RemoveAll can empty a tree whose dirs came read-only.
func makeWritable(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// droppedBackends are the state backends of Terraform whose packages are
// nested Go modules, left out of the module proxy's zip of Terraform.
var droppedBackends = []string{"azurerm", "consul", "cos", "gcs", "kubernetes", "oci", "oss", "pg", "s3"}

// dropNestedBackends makes Terraform's module (a writable copy at src)
// build without the nested modules the proxy's zip leaves out: only
// internal/backend/init/init.go imports them, so their imports and map
// entries go from it and their require and replace lines from go.mod.
// Every edit must find exactly what it removes, so a release that moved
// things fails here by name instead of building something else.
func dropNestedBackends(src string) error {
	pkgs := map[string]string{ // backend name -> import alias in init.go
		"azurerm": "backendAzure", "consul": "backendConsul", "cos": "backendCos",
		"gcs": "backendGCS", "kubernetes": "backendKubernetes", "oci": "backendOCI",
		"oss": "backendOSS", "pg": "backendPg", "s3": "backendS3",
	}
	dirs := map[string]string{"azurerm": "azure"} // backend name -> its dir, where they differ
	initGo := filepath.Join(src, "internal", "backend", "init", "init.go")
	b, err := os.ReadFile(initGo)
	if err != nil {
		return err
	}
	init := string(b)
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	gomod := string(mod)
	cut := func(s *string, line, what string) error {
		if strings.Count(*s, line) != 1 {
			return fmt.Errorf("%s: want exactly one line %q", what, strings.TrimSpace(line))
		}
		*s = strings.Replace(*s, line, "", 1)
		return nil
	}
	cutLine := func(s *string, prefix, what string) error {
		lines := strings.SplitAfter(*s, "\n")
		n := 0
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				lines[i] = ""
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: want exactly one line starting %q, found %d", what, prefix, n)
		}
		*s = strings.Join(lines, "")
		return nil
	}
	for _, name := range droppedBackends {
		alias, dir := pkgs[name], name
		if d, ok := dirs[name]; ok {
			dir = d
		}
		modPath := "github.com/hashicorp/terraform/internal/backend/remote-state/" + dir
		if err := cut(&init, "\t"+alias+" \""+modPath+"\"\n", "init.go"); err != nil {
			return err
		}
		if err := cutLine(&init, fmt.Sprintf("%q:", name), "init.go"); err != nil {
			return err
		}
		if err := cutLine(&gomod, modPath+" v0.0.0-", "go.mod"); err != nil {
			return err
		}
		if err := cutLine(&gomod, "replace "+modPath+" =>", "go.mod"); err != nil {
			return err
		}
	}
	legacy := "github.com/hashicorp/terraform/internal/legacy"
	if err := cutLine(&gomod, legacy+" v0.0.0-", "go.mod"); err != nil {
		return err
	}
	if err := cutLine(&gomod, "replace "+legacy+" =>", "go.mod"); err != nil {
		return err
	}
	if err := os.WriteFile(initGo, []byte(init), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644)
}
