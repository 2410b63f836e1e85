package pluginc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockFileFormat(t *testing.T) {
	a := Provider{Hostname: "registry.tfisolate.test", Namespace: "tfisolate", Type: "tfitest"}
	b := Provider{Hostname: "example.test", Namespace: "acme", Type: "thing"}
	got := LockFile([]Package{
		{Provider: a, Version: "1.1.0", Platform: "linux_amd64", Constraints: "~> 1.0", Hashes: []string{"zh:bbb", "h1:xyz=", "zh:aaa"}},
		{Provider: a, Version: "1.1.0", Platform: "darwin_arm64", Constraints: "~> 1.0", Hashes: []string{"zh:aaa", "h1:abc=", "zh:bbb"}},
		{Provider: b, Version: "0.1.0", Platform: "linux_amd64", Hashes: []string{"h1:q="}},
	})
	want := `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "example.test/acme/thing" {
  version = "0.1.0"
  hashes = [
    "h1:q=",
  ]
}

provider "registry.tfisolate.test/tfisolate/tfitest" {
  version     = "1.1.0"
  constraints = "~> 1.0"
  hashes = [
    "h1:abc=",
    "h1:xyz=",
    "zh:aaa",
    "zh:bbb",
  ]
}
`
	require.Equal(t, want, string(got))

	locks, err := ParseLockFile(got)
	require.NoError(t, err)
	require.Equal(t, []Lock{
		{Provider: b, Version: "0.1.0", Hashes: []string{"h1:q="}},
		{Provider: a, Version: "1.1.0", Constraints: "~> 1.0", Hashes: []string{"h1:abc=", "h1:xyz=", "zh:aaa", "zh:bbb"}},
	}, locks)
	require.Equal(t, Requirement{Provider: a, Constraints: "~> 1.0", Locked: "1.1.0", LockedHashes: locks[1].Hashes}, locks[1].Requirement())
}

func TestParseLockFileErrors(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":      `provider "a/b/c" {`,
		"bad address": "provider \"a/b/c/d\" {\n version = \"1.0.0\"\n}\n",
		"no version":  "provider \"example.test/a/b\" {\n}\n",
		"bad version": "provider \"example.test/a/b\" {\n version = \"x\"\n}\n",
		"bad constr":  "provider \"example.test/a/b\" {\n version = \"1.0.0\"\n constraints = \"^1\"\n}\n",
		"twice":       "provider \"example.test/a/b\" {\n version = \"1.0.0\"\n}\nprovider \"example.test/a/b\" {\n version = \"1.0.0\"\n}\n",
	} {
		_, err := ParseLockFile([]byte(src))
		require.ErrorIs(t, err, ErrInvalidLockFile, name)
	}
}

func TestCLIConfig(t *testing.T) {
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(t.TempDir())))
	require.NoError(t, err)
	require.Equal(t, "provider_installation {\n  direct {\n  }\n}\n", string(c.CLIConfig()))
	require.NotContains(t, string(c.CLIConfig()), "plugin_cache_dir")

	// A complete package in the cache turns it into a mirror for that provider only.
	p := Provider{Hostname: "example.test", Namespace: "acme", Type: "demo"}
	require.NoError(t, os.MkdirAll(filepath.Join(c.Dir(), p.Hostname, p.Namespace, p.Type, "1.0.0", "linux_amd64"), 0o755))
	want := "provider_installation {\n" +
		"  filesystem_mirror {\n" +
		"    path    = \"" + filepath.ToSlash(c.Dir()) + "\"\n" +
		"    include = [\"example.test/acme/demo\"]\n" +
		"  }\n" +
		"  direct {\n" +
		"    exclude = [\"example.test/acme/demo\"]\n" +
		"  }\n" +
		"}\n"
	require.Equal(t, want, string(c.CLIConfig()))
}
