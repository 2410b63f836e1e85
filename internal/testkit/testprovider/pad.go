package testprovider

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// padSeed fixes the padding bytes, so every padded build of a size is
// byte-identical and its hashes are stable across test runs.
var padSeed = [32]byte{'t', 'f', 'i', 't', 'e', 's', 't', '-', 'p', 'a', 'd'}

func pad(base *Binary, n int64) (*Binary, error) {
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, fmt.Sprintf("pad-%d", n), filepath.Base(base.Path))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("pad provider: %w", err)
	}
	if err := padTo(out, base, n); err != nil {
		return nil, err
	}
	return describe(out)
}

// padTo writes base followed by n padding bytes to out.
func padTo(out string, base *Binary, n int64) error {
	src, err := os.Open(base.Path)
	if err != nil {
		return fmt.Errorf("pad provider: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("pad provider: %w", err)
	}
	defer dst.Close() // a second Close after the checked one below is harmless
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("pad provider %s: %w", out, err)
	}
	// ChaCha8 output is incompressible, so zipping cannot shrink the
	// padding away.
	if _, err := io.CopyN(dst, rand.NewChaCha8(padSeed), n); err != nil {
		return fmt.Errorf("pad provider %s: %w", out, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("pad provider %s: %w", out, err)
	}
	return nil
}
