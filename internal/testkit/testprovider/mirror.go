package testprovider

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFilesystemMirror lays bin out in dir as Terraform's packed
// filesystem mirror, one package per version for the current platform:
// dir/HOST/NAMESPACE/TYPE/terraform-provider-tfitest_VER_OS_ARCH.zip. It
// returns the written zip paths in the order of versions. Each zip is a
// private copy the test may change.
func WriteFilesystemMirror(tb TB, dir string, bin *Binary, versions ...string) []string {
	tb.Helper()
	return WriteFilesystemMirrorAs(tb, dir, Host, Namespace, bin, versions...)
}

// WriteFilesystemMirrorAs is WriteFilesystemMirror with the provider
// under another host and namespace (the type stays tfitest, the name of
// the binary): dir/host/namespace/tfitest/. Neither part is checked, so
// a test can offer an address an engine refuses.
func WriteFilesystemMirrorAs(tb TB, dir, host, namespace string, bin *Binary, versions ...string) []string {
	tb.Helper()
	pkgDir := filepath.Join(dir, host, namespace, Type)
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		tb.Fatalf("testprovider: write filesystem mirror: %v", err)
	}
	paths := make([]string, 0, len(versions))
	for _, v := range versions {
		src := bin.Zip(tb, v)
		dst := filepath.Join(pkgDir, filepath.Base(src))
		if err := copyFile(dst, src); err != nil {
			tb.Fatalf("testprovider: write filesystem mirror: %v", err)
		}
		paths = append(paths, dst)
	}
	return paths
}

// CLIConfigFilesystemMirror returns a Terraform CLI configuration that
// installs the tfitest provider only from the packed filesystem mirror at dir
// and never tries to reach its (fictional) host directly. Other providers
// keep the direct installation method.
func CLIConfigFilesystemMirror(dir string) []byte {
	return fmt.Appendf(nil, `provider_installation {
  filesystem_mirror {
    path    = %s
    include = ["%s/*/*"]
  }
  direct {
    exclude = ["%s/*/*"]
  }
}
`, hclString(dir), Host, Host)
}

// WriteCLIConfig writes cfg to a fresh file in a t.TempDir and returns its
// path, ready for testenv.TerraformEnv.
func WriteCLIConfig(tb TB, cfg []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "terraform.rc")
	if err := os.WriteFile(p, cfg, 0o644); err != nil {
		tb.Fatalf("testprovider: write CLI config: %v", err)
	}
	return p
}

// hclString quotes a path for the CLI config. Forward slashes work on every
// OS and avoid backslash escapes; the CLI config is never interpolated.
func hclString(s string) string {
	s = filepath.ToSlash(s)
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
