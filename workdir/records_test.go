package workdir

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestStampNeverHoldsModuleSources: Spec.ModuleSources values (a remote
// source carrying a token among them) reach the stamp as a digest only;
// the same values keep the home up to date, other values rebuild it. A
// version 1 stamp, which kept them in clear, is read (the home stays up
// to date) and rewritten in this version's form, without them.
func TestStampNeverHoldsModuleSources(t *testing.T) {
	const token = "tok3n-4e9QvZ"
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/app/main.tf": "module \"net\" { source = \"../../modules/${var.net}\" }\n" +
			"module \"priv\" { source = \"git::https://x:${var.token}@example.invalid/r.git\" }\n",
		"modules/blue/main.tf": `output "x" { value = "blue" }`,
	})
	src := filepath.Join(base, "components", "app")
	rec := &recorder{}
	m := newManager(t, WithLogger(slog.New(rec)))
	sources := map[string]string{"net": "../../modules/blue", "priv": "git::https://x:" + token + "@example.invalid/r.git"}
	spec := Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: sources}
	w := prepare(t, m, spec)
	require.NoError(t, w.Close())
	raw := func() map[string]any {
		t.Helper()
		b, err := os.ReadFile(stampPath(w.Home))
		require.NoError(t, err)
		require.NotContains(t, string(b), token)
		require.NotContains(t, string(b), "../../modules/blue", "no value, a local one included")
		var st map[string]any
		require.NoError(t, json.Unmarshal(b, &st))
		return st
	}
	st := raw()
	require.EqualValues(t, stampVersion, st["version"])
	require.Equal(t, sourcesDigest(sources), st["module_sources_digest"])
	require.NotContains(t, st, "module_sources")

	upToDate := func(s Spec) bool {
		t.Helper()
		rec.reset()
		w := prepare(t, m, s)
		require.NoError(t, w.Close())
		return len(rec.find("workdir up to date")) == 1
	}
	require.True(t, upToDate(spec), "the same values: up to date")
	other := Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: map[string]string{"net": "../../modules/blue", "priv": "git::https://x:other@example.invalid/r.git"}}
	require.False(t, upToDate(other), "another value: the layout is looked for again")
	require.True(t, upToDate(other))

	// A version 1 stamp, as an older release wrote it (values in clear).
	require.False(t, upToDate(spec))
	v1 := raw()
	v1["version"] = 1
	delete(v1, "module_sources_digest")
	v1["module_sources"] = sources
	b, err := json.Marshal(v1)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stampPath(w.Home), b, 0o644))
	require.True(t, upToDate(spec), "a version 1 stamp of the same values: up to date")
	st = raw()
	require.EqualValues(t, stampVersion, st["version"], "rewritten in this version's form")
	require.Equal(t, sourcesDigest(sources), st["module_sources_digest"])
}

// TestPrepareKeepsRecordsPrivate: the home, its .tfisolate and data
// dirs and the root's .locks dir are 0700; the stamp, the source files'
// record, the lock file and every generated file (a tfvars may hold a
// secret) are 0600; a home an older release left wider (0755 dirs, 0644
// files) is narrowed by its next Prepare, up to date or not.
func TestPrepareKeepsRecordsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `variable "password" {}`})
	m := newManager(t)
	spec := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"secret.auto.tfvars": []byte(`password = "hunter2"`)}}
	w := prepare(t, m, spec)
	require.NoError(t, w.Close())
	private := map[string]fs.FileMode{
		w.Home: 0o700, filepath.Join(w.Home, metaDir): 0o700, w.DataDir: 0o700, filepath.Join(m.root, locksDir): 0o700,
		stampPath(w.Home): 0o600, filepath.Join(w.Home, metaDir, sourceFilesFile): 0o600, w.LockFile: 0o600,
		filepath.Join(w.Dir, "secret.auto.tfvars"): 0o600,
	}
	check := func(why string) {
		t.Helper()
		for p, want := range private {
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			require.Equal(t, want, fi.Mode().Perm(), "%s: %s", why, p)
		}
	}
	check("a new home")
	widen := func() {
		for p, want := range private {
			require.NoError(t, os.Chmod(p, want|0o044|(want&0o100)>>3|(want&0o100)>>6))
		}
	}
	widen()
	w = prepare(t, m, spec)
	require.NoError(t, w.Close())
	check("an up-to-date home an older release left wider")
	widen()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `variable "password" { type = string }`})
	w = prepare(t, m, spec)
	require.NoError(t, w.Close())
	check("a refreshed home an older release left wider")
}

// TestSourceFiles: SourceFiles names every file materialized from the
// source (its local modules' and the seeded lock file included, no
// generated file) by its path from the component, with a digest that
// changes with its content and mode and with nothing else; a home with
// no record of its own (an older release built it) gets one on its next
// Prepare, and a record of another build is never taken for this one's.
func TestSourceFiles(t *testing.T) {
	base := t.TempDir()
	testenv.WriteTree(t, base, map[string]string{
		"components/app/main.tf":             `module "net" { source = "../../modules/net" }`,
		"components/app/.terraform.lock.hcl": "# lock\n",
		"modules/net/main.tf":                `output "x" { value = 1 }`,
	})
	src := filepath.Join(base, "components", "app")
	m := newManager(t)
	spec := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"gen.auto.tfvars": []byte(`x = 1`)}}
	w := prepare(t, m, spec)
	first := w.SourceFiles()
	require.NoError(t, w.Close())
	require.ElementsMatch(t, []string{"main.tf", ".terraform.lock.hcl", "../../modules/net/main.tf"}, keys(first))

	testenv.WriteTree(t, base, map[string]string{"modules/net/main.tf": `output "x" { value = 2 }`})
	w = prepare(t, m, spec)
	second := w.SourceFiles()
	require.NoError(t, w.Close())
	require.NotEqual(t, first["../../modules/net/main.tf"], second["../../modules/net/main.tf"])
	require.Equal(t, first["main.tf"], second["main.tf"])
	require.NoError(t, os.Chmod(filepath.Join(src, "main.tf"), 0o755))
	w = prepare(t, m, spec)
	third := w.SourceFiles()
	require.NoError(t, w.Close())
	require.NotEqual(t, second["main.tf"], third["main.tf"], "a mode counts")

	// An older release's home: no record. The next Prepare, up to date,
	// writes it; a record of another build is not this one's.
	record := filepath.Join(w.Home, metaDir, sourceFilesFile)
	require.NoError(t, os.Remove(record))
	w = prepare(t, m, spec)
	require.Equal(t, third, w.SourceFiles(), "backfilled by an up-to-date Prepare")
	w.SourceDigest = "another build"
	require.Nil(t, w.SourceFiles())
	require.NoError(t, w.Close())
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
