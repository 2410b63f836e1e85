package pluginc

import (
	"encoding/json"
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
		"bad hash":    "provider \"example.test/a/b\" {\n version = \"1.0.0\"\n hashes = [\"h1:a b\"]\n}\n",
		"no scheme":   "provider \"example.test/a/b\" {\n version = \"1.0.0\"\n hashes = [\"abc\"]\n}\n",
		"twice":       "provider \"example.test/a/b\" {\n version = \"1.0.0\"\n}\nprovider \"example.test/a/b\" {\n version = \"1.0.0\"\n}\n",
	} {
		_, err := ParseLockFile([]byte(src))
		require.ErrorIs(t, err, ErrInvalidLockFile, name)
	}
}

func TestCLIConfig(t *testing.T) {
	type block struct {
		FilesystemMirror []struct {
			Path    string
			Include []string
		} `json:"filesystem_mirror"`
		Direct []struct{ Exclude []string }
	}
	parse := func(c *Cache) block {
		var cfg map[string][]block
		require.NoError(t, json.Unmarshal(c.CLIConfig(), &cfg), string(c.CLIConfig()))
		require.Len(t, cfg, 1, "only provider_installation, never plugin_cache_dir")
		require.Len(t, cfg["provider_installation"], 1)
		return cfg["provider_installation"][0]
	}
	// A path that HCL 1's quoted strings cannot carry.
	dir := filepath.Join(t.TempDir(), `odd ${x} %{y} "q" \ dir`)
	c, err := Open(dir, WithSource(FilesystemMirror(t.TempDir())))
	require.NoError(t, err)
	empty := parse(c)
	require.Empty(t, empty.FilesystemMirror)
	require.Len(t, empty.Direct, 1)
	require.Empty(t, empty.Direct[0].Exclude)

	// A complete package in the cache turns it into a mirror for that provider only.
	p := Provider{Hostname: "example.test", Namespace: "acme", Type: "demo"}
	require.NoError(t, os.MkdirAll(filepath.Join(c.PackagesDir(), p.Hostname, p.Namespace, p.Type, "1.0.0", "linux_amd64"), 0o755))
	got := parse(c)
	require.Len(t, got.FilesystemMirror, 1)
	require.Equal(t, filepath.ToSlash(c.PackagesDir()), got.FilesystemMirror[0].Path)
	require.Equal(t, []string{"example.test/acme/demo"}, got.FilesystemMirror[0].Include)
	require.Equal(t, []string{"example.test/acme/demo"}, got.Direct[0].Exclude)
}
