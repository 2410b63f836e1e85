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
	"testing"
	"time"
)

// TofuVersion is the OpenTofu release Tofu builds.
const TofuVersion = "1.10.6"

// tofuModule is OpenTofu's Go module. `go install module@version` refuses
// it (its go.mod has replace directives), so a Build downloads the module
// and builds ./cmd/tofu inside it.
const tofuModule = "github.com/opentofu/opentofu"

// Tofu returns the path of an OpenTofu TofuVersion binary (Tofu110),
// built from OpenTofu's Go module once per machine and cached under
// os.UserCacheDir()/tfisolate/tofu/vVERSION/tofu (see Build). When it
// cannot be built the test is skipped with the reason, except under
// CI=true, where it fails.
func Tofu(tb testing.TB) string {
	tb.Helper()
	return Tofu110.Binary(tb)
}

// TofuCacheDir returns the directory Tofu builds into and keeps the binary
// in: os.UserCacheDir()/tfisolate/tofu/vVERSION.
func TofuCacheDir() (string, error) { return Tofu110.CacheDir() }

// EnsureTofu is Tofu for programs that are not tests (bench/): it returns
// the path of the cached OpenTofu TofuVersion binary, building it first
// when the cache has none, and returns the reason as an error when it
// cannot. It never skips or fails a test; ctx bounds the wait and the
// build.
func EnsureTofu(ctx context.Context) (string, error) { return Tofu110.Ensure(ctx) }

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
