package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hc-install/fs"
	"github.com/hashicorp/hc-install/product"
	"github.com/hashicorp/hc-install/releases"

	"github.com/tfisolate/tfisolate/internal/pathtrust"
)

// TerraformRelease is the Terraform release Find installs when terraform is
// not on PATH.
const TerraformRelease = "1.11.4"

// InstallTimeout bounds one Terraform install by Find: the wait for another
// process's install plus the download and unpack of our own.
const InstallTimeout = 10 * time.Minute

// Find returns the absolute path of a binary of the given engine.
//
// Terraform: the first terraform on PATH (hc-install's fs.AnyVersion); else,
// when installDir is not empty, TerraformRelease installed into
// installDir/VERSION/ once across processes (an exclusive flock in
// installDir, unpacked into a temp dir and renamed into place, so a killed
// install is never mistaken for a finished one). installDir is created
// 0700; an install dir, a dir above it or a binary in it that another
// user owns or can write to is refused (ErrUnsafeInstallDir), never run.
//
// OpenTofu: the first tofu on PATH; installDir is not used, since OpenTofu
// publishes no installer library. A missing binary is an error wrapping
// ErrNotFound that says how to get one.
//
// A done ctx ends the search (and any install wait or download) with an
// error wrapping ctx.Err().
func Find(ctx context.Context, kind Kind, installDir string) (string, error) {
	if !kind.Valid() {
		return "", fmt.Errorf("find engine %q: %w", string(kind), ErrUnknownKind)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("find %s: %w", kind, err)
	}
	if kind == OpenTofu {
		return findTofu()
	}
	return findTerraform(ctx, installDir)
}

func findTofu() (string, error) {
	p, err := exec.LookPath(OpenTofu.Executable())
	if err != nil {
		return "", fmt.Errorf("%w: tofu is not on PATH (%v); install OpenTofu from its releases, "+
			"or build it from its Go module (go build ./cmd/tofu in github.com/opentofu/opentofu), "+
			"and put tofu on PATH or pass the binary's path", ErrNotFound, err)
	}
	// LookPath refuses relative results (exec.ErrDot), but a PATH entry may
	// still be relative to the working directory: pin it now.
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("find tofu: %s: %w", p, err)
	}
	return abs, nil
}

func findTerraform(ctx context.Context, installDir string) (string, error) {
	av := &fs.AnyVersion{Product: &product.Terraform}
	if p, err := av.Find(ctx); err == nil {
		return p, nil
	}
	if installDir == "" {
		return "", fmt.Errorf("%w: terraform is not on PATH", ErrNotFound)
	}
	p, err := installTerraform(ctx, installDir)
	if err != nil {
		return "", fmt.Errorf("%w: terraform is not on PATH, and installing terraform %s into %s failed: %w",
			ErrNotFound, TerraformRelease, installDir, err)
	}
	return p, nil
}

func installTerraform(ctx context.Context, installDir string) (string, error) {
	final := filepath.Join(installDir, TerraformRelease, Terraform.Executable())
	// A binary found here runs as this user: the dir and what is in it
	// must be this user's (invariant 12), never another user's plant.
	if err := checkInstall(installDir, final); err != nil {
		return "", err
	}
	if isExecutable(final) {
		return final, nil
	}
	ctx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	if err := MakeInstallDir(installDir); err != nil {
		return "", err
	}
	// hc-install unpacks in place with no lock of its own: the flock makes
	// concurrent processes share one install instead of tearing each other's.
	lk := flock.New(filepath.Join(installDir, ".install.lock"))
	ok, err := lk.TryLockContext(ctx, 100*time.Millisecond)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("not acquired")
		}
		return "", fmt.Errorf("lock %s: %w", lk.Path(), err)
	}
	defer lk.Unlock()
	if isExecutable(final) { // another process finished while we waited
		return final, nil
	}
	tmp, err := os.MkdirTemp(installDir, ".tmp-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ev := &releases.ExactVersion{Product: product.Terraform, Version: version.Must(version.NewVersion(TerraformRelease)), InstallDir: tmp}
	if _, err := ev.Install(ctx); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return "", err
	}
	// The rename publishes a complete binary: a killed install leaves only
	// the temp dir, which nothing looks at.
	if err := os.Rename(filepath.Join(tmp, Terraform.Executable()), final); err != nil {
		return "", err
	}
	return final, nil
}

// MakeInstallDir creates installDir, and the dirs above it that are
// missing, 0700, then checks it as checkInstall does: whoever made it
// first, it is checked as it is now. Find calls it before an install.
func MakeInstallDir(installDir string) error {
	if err := os.MkdirAll(installDir, 0o700); err != nil {
		return err
	}
	return checkInstall(installDir, filepath.Join(installDir, TerraformRelease, Terraform.Executable()))
}

// checkInstall refuses an install dir, a dir above it or on the way to
// the binary final, or final itself, that someone other than the
// effective user or root owns or can write to (internal/pathtrust's
// rule, as for the plugin cache): a terraform planted there would run as
// this user. The error wraps ErrUnsafeInstallDir and names the path, its
// owner and mode.
func checkInstall(installDir, final string) error {
	pol := pathtrust.Effective()
	u, err := pol.CheckRoot(installDir)
	if u == nil && err == nil {
		u, err = pol.CheckInside(installDir, TerraformRelease)
	}
	if err != nil {
		return err
	}
	if u == nil {
		if fi, err := os.Lstat(final); err == nil {
			if why := pol.Foreign(fi); why != "" {
				u = pathtrust.UnsafeOf(final, fi, "it "+why)
			} else if !fi.Mode().IsRegular() {
				u = pathtrust.UnsafeOf(final, fi, "it is a "+pathtrust.TypeName(fi.Mode())+", not a regular file")
			}
		}
	}
	if u != nil {
		return fmt.Errorf("%w: %w; use an install dir only you can write, such as the default under os.UserCacheDir (0700)", ErrUnsafeInstallDir, u)
	}
	return nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}
