package testprovider

import (
	"archive/zip"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-version"
)

// zipTime is the modification time of every zipped file: fixed, so zips are
// byte-identical across calls and their zh: hashes stable.
var zipTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type zipKey struct {
	bin, version string
}

type zipResult struct {
	once sync.Once
	path string
	err  error
}

// PackageZip writes a provider package for version to w: a zip holding the
// single executable ExecutableName(version), mode 0755, read from binPath.
// The output depends only on the binary's bytes and the version.
func PackageZip(w io.Writer, binPath, ver string) error {
	if err := checkVersion(ver); err != nil {
		return err
	}
	src, err := os.Open(binPath)
	if err != nil {
		return fmt.Errorf("package provider: %w", err)
	}
	defer src.Close()
	zw := zip.NewWriter(w)
	// Deflate as real provider zips are, but at the fastest level: the
	// padding is incompressible anyway.
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestSpeed)
	})
	hdr := &zip.FileHeader{Name: ExecutableName(ver), Method: zip.Deflate, Modified: zipTime}
	hdr.SetMode(0o755)
	fw, err := zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("package provider %s: %w", binPath, err)
	}
	if _, err := io.Copy(fw, src); err != nil {
		return fmt.Errorf("package provider %s: %w", binPath, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("package provider %s: %w", binPath, err)
	}
	return nil
}

// Zip returns the path of the provider package for version on the current
// platform, named ZipName(version, Platform). It is made once per binary
// and version and shared by all tests: copy it before changing it. A bad
// version or a failed write fails the test.
func (b *Binary) Zip(tb TB, ver string) string {
	tb.Helper()
	p, err := b.zip(ver)
	if err != nil {
		tb.Fatalf("testprovider: %v", err)
	}
	return p
}

func (b *Binary) zip(ver string) (string, error) {
	if err := checkVersion(ver); err != nil {
		return "", err
	}
	dir, err := sharedDir()
	if err != nil {
		return "", err
	}
	builds.mu.Lock()
	if builds.zips == nil {
		builds.zips = map[zipKey]*zipResult{}
	}
	k := zipKey{bin: b.Path, version: ver}
	r, ok := builds.zips[k]
	if !ok {
		r = &zipResult{}
		builds.zips[k] = r
	}
	builds.mu.Unlock()
	r.once.Do(func() {
		// Zips of different binaries go to different dirs, keyed by content.
		zdir := filepath.Join(dir, "zips", b.SHA256[:16])
		if err := os.MkdirAll(zdir, 0o755); err != nil {
			r.err = fmt.Errorf("package provider: %w", err)
			return
		}
		r.path = filepath.Join(zdir, ZipName(ver, Platform))
		r.err = packInChild(r.path, b.Path, ver)
	})
	return r.path, r.err
}

// packInChild runs the tfitest-pack helper built with the provider. Under
// -race, compress/flate is instrumented and zipping a 20 MB binary in the
// test process takes seconds; the helper, built without -race, takes a
// tenth of that.
func packInChild(path, binPath, ver string) error {
	builds.mu.Lock()
	packer := builds.packer
	builds.mu.Unlock()
	if packer == "" {
		return WriteZipFile(path, binPath, ver)
	}
	out, err := exec.Command(packer, path, binPath, ver).CombinedOutput()
	if err != nil {
		return fmt.Errorf("package provider %s with %s: %w: %s", binPath, packer, err, out)
	}
	return nil
}

// WriteZipFile writes the package PackageZip makes to path, atomically: it
// is written under a temp name in the same directory and renamed, so no
// reader ever sees half a zip.
func WriteZipFile(path, binPath, ver string) error {
	if err := checkVersion(ver); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".zip-*")
	if err != nil {
		return fmt.Errorf("package provider: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := PackageZip(tmp, binPath, ver); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("package provider: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("package provider: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("package provider: %w", err)
	}
	return nil
}

func checkVersion(ver string) error {
	// Terraform parses the version out of file names, so only the canonical
	// form round-trips: "1.2.3", not "v1.2.3" or "1.2".
	v, err := version.NewSemver(ver)
	if err != nil || v.String() != ver {
		return fmt.Errorf("%w: %q (want a plain semantic version such as 1.2.3)", ErrInvalidVersion, ver)
	}
	return nil
}
