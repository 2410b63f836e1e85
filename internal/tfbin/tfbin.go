package tfbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hc-install/fs"
	"github.com/hashicorp/hc-install/product"
	"github.com/hashicorp/hc-install/releases"
)

// ErrNotFound is returned when terraform is neither on PATH nor installable.
var ErrNotFound = errors.New("terraform not found")

// Version is the release installed when no terraform is on PATH.
var Version = version.Must(version.NewVersion("1.11.4"))

// Find returns the absolute path of a terraform binary. It tries PATH first;
// if that fails and installDir is not empty it installs Version into
// installDir (once, across processes) and returns that binary.
func Find(ctx context.Context, installDir string) (string, error) {
	av := &fs.AnyVersion{Product: &product.Terraform}
	if p, err := av.Find(ctx); err == nil {
		return p, nil
	}
	if installDir == "" {
		return "", fmt.Errorf("%w on PATH", ErrNotFound)
	}
	p, err := install(ctx, installDir)
	if err != nil {
		return "", fmt.Errorf("%w on PATH, and installing terraform %s into %s failed: %w", ErrNotFound, Version, installDir, err)
	}
	return p, nil
}

func binName() string {
	if runtime.GOOS == "windows" {
		return "terraform.exe"
	}
	return "terraform"
}

func install(ctx context.Context, installDir string) (string, error) {
	final := filepath.Join(installDir, Version.String(), binName())
	if isExecutable(final) {
		return final, nil
	}
	if err := os.MkdirAll(installDir, 0o755); err != nil {
		return "", err
	}
	lk := flock.New(filepath.Join(installDir, ".install.lock"))
	ok, err := lk.TryLockContext(ctx, 100*time.Millisecond)
	if err != nil || !ok {
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
	ev := &releases.ExactVersion{Product: product.Terraform, Version: Version, InstallDir: tmp}
	if _, err := ev.Install(ctx); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, binName()), final); err != nil {
		return "", err
	}
	return final, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}
