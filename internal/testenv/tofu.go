package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// TofuVersion is the OpenTofu release Tofu builds.
const TofuVersion = "1.10.6"

// TofuBuildTimeout bounds Tofu's build, including the wait for another
// process that is building it: a cold build compiles all of OpenTofu (about
// six minutes on two cores).
const TofuBuildTimeout = 20 * time.Minute

// tofuModule is OpenTofu's Go module. `go install module@version` refuses
// it (its go.mod has replace directives), so Tofu downloads the module and
// builds ./cmd/tofu inside it.
const tofuModule = "github.com/opentofu/opentofu"

var (
	tofuOnce sync.Once
	tofuPath string
	tofuErr  error
)

// Tofu returns the path of an OpenTofu TofuVersion binary, built from
// OpenTofu's Go module once per machine and cached under
// os.UserCacheDir()/tfisolate/tofu/vVERSION/tofu. Concurrent test binaries
// share one build (an exclusive flock beside the binary); the build goes to
// a temp dir that is renamed into place only after the binary reported the
// expected version, so a killed build leaves nothing a later run would use.
// When it cannot be built the test is skipped with the reason, except under
// CI=true, where it fails.
func Tofu(tb testing.TB) string {
	tb.Helper()
	tofuOnce.Do(func() {
		tofuPath, tofuErr = EnsureTofu(context.Background())
	})
	if tofuErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("OpenTofu is required under CI=true: %v", tofuErr)
		}
		tb.Skipf("skipping: OpenTofu %s is not available (%v); it is built once per machine with the go command from module %s@v%s (the module proxy must be reachable)",
			TofuVersion, tofuErr, tofuModule, TofuVersion)
	}
	return tofuPath
}

// TofuCacheDir returns the directory Tofu builds into and keeps the binary
// in: os.UserCacheDir()/tfisolate/tofu/vVERSION.
func TofuCacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("OpenTofu build cache: %w", err)
	}
	return filepath.Join(c, "tfisolate", "tofu", "v"+TofuVersion), nil
}

// EnsureTofu is Tofu for programs that are not tests (bench/): it returns
// the path of the cached OpenTofu TofuVersion binary, building it first
// when the cache has none (same cache, flock and deadline as Tofu), and
// returns the reason as an error when it cannot. It never skips or fails a
// test; ctx bounds the wait and the build.
func EnsureTofu(ctx context.Context) (string, error) {
	dir, err := TofuCacheDir()
	if err != nil {
		return "", err
	}
	return buildTofu(ctx, dir, nil)
}

// buildTofu makes dir/tofu if it is not there yet and returns its path.
// onBuild, when not nil, is told the temp dir of a build once `go build` has
// started (tests kill the build then).
func buildTofu(ctx context.Context, dir string, onBuild func(tmp string)) (string, error) {
	final := filepath.Join(dir, engine.OpenTofu.Executable())
	if isExecutable(final) {
		return final, nil
	}
	ctx, cancel := context.WithTimeout(ctx, TofuBuildTimeout)
	defer cancel()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build OpenTofu: %w", err)
	}
	lk := flock.New(filepath.Join(dir, ".build.lock"))
	ok, err := lk.TryLockContext(ctx, 250*time.Millisecond)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("not acquired")
		}
		return "", fmt.Errorf("build OpenTofu: lock %s: %w", lk.Path(), err)
	}
	defer lk.Unlock()
	if isExecutable(final) { // another process built it while we waited
		return final, nil
	}
	// Temp dirs are only made under the lock, so any left now belong to a
	// build that was killed.
	if old, _ := filepath.Glob(filepath.Join(dir, ".tmp-build-*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-build-")
	if err != nil {
		return "", fmt.Errorf("build OpenTofu: %w", err)
	}
	defer os.RemoveAll(tmp)

	goBin, err := goTool()
	if err != nil {
		return "", fmt.Errorf("build OpenTofu: %w", err)
	}
	modDir, err := downloadModule(ctx, goBin, tmp, tofuModule, TofuVersion)
	if err != nil {
		return "", fmt.Errorf("build OpenTofu: %w", err)
	}
	out := filepath.Join(tmp, engine.OpenTofu.Executable())
	// The flags of OpenTofu's own release build (.goreleaser.yaml): without
	// version.dev=no the binary calls itself "1.10.6-dev".
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath",
		"-ldflags=-s -w -X github.com/opentofu/opentofu/version.dev=no", "-o", out, "./cmd/tofu")
	cmd.Dir = modDir // read-only: -o points into tmp
	cmd.Env = goEnv()
	started := func() {
		if onBuild != nil {
			onBuild(tmp)
		}
	}
	if msg, err := runCapture(cmd, started); err != nil {
		return "", fmt.Errorf("build OpenTofu: go build ./cmd/tofu in %s: %w\n%s", modDir, err, msg)
	}
	info, err := engine.Detect(ctx, out)
	if err != nil {
		return "", fmt.Errorf("build OpenTofu: the built binary: %w", err)
	}
	if info.Kind != engine.OpenTofu || info.Version.String() != TofuVersion {
		return "", fmt.Errorf("build OpenTofu: the built binary is %s, want OpenTofu %s", info, TofuVersion)
	}
	if err := os.Rename(out, final); err != nil {
		return "", fmt.Errorf("build OpenTofu: %w", err)
	}
	return final, nil
}

// ModuleDir returns the directory of the Go module path at version
// ("1.11.4", no "v") in the module cache, fetched through the module
// proxy first when the cache lacks it (tests read another project's
// source there, never copying it into this repo). ctx bounds the fetch.
func ModuleDir(ctx context.Context, path, version string) (string, error) {
	goBin, err := goTool()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "tfisolate-moddl-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	return downloadModule(ctx, goBin, tmp, path, version)
}

// downloadModule fetches module path@v<version> through the module proxy
// (or finds it in the module cache) and returns its directory.
func downloadModule(ctx context.Context, goBin, workDir, path, version string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", path+"@v"+version)
	// Outside any module, so no go.mod or go.sum of ours is touched.
	cmd.Dir = workDir
	cmd.Env = goEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &mod); err != nil || mod.Error != "" || mod.Dir == "" || runErr != nil {
		return "", fmt.Errorf("go mod download %s@v%s: %v %s\n%s%s", path, version, runErr, mod.Error, stdout.String(), stderr.String())
	}
	return mod.Dir, nil
}

// goEnv is the environment for the go command: the test's, with settings
// that make the build a plain, static, module-mode build for this platform
// whatever the user's GOFLAGS or go.work say.
func goEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH,
		"GOFLAGS=-mod=readonly", "GOWORK=off", "GO111MODULE=on")
}

// runCapture runs cmd, calling started once it runs, and returns its
// combined output, cut to the last 32 KiB (where go build's errors are).
func runCapture(cmd *exec.Cmd, started func()) (string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Start()
	if err == nil {
		started()
		err = cmd.Wait()
	}
	s := out.String()
	if len(s) > 32<<10 {
		s = "...\n" + s[len(s)-32<<10:]
	}
	return s, err
}

func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("find the go command: not on PATH and GOROOT is not set")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}
