package workdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// writeNodeModules writes a tree shaped like a lambda's installed
// node_modules: 1,000 packages of 20 files each (package.json, README.md,
// LICENSE, an index and sources under lib/ and dist/, a nested
// node_modules for some), 20,000 files and 20 MB in all, sizes from a few
// hundred bytes to a few KiB as npm packages have them. It returns the
// number of files and bytes written.
func writeNodeModules(t testing.TB, dir string) (files int, bytes int64) {
	t.Helper()
	line := "module.exports = function () { return 'a line of a vendored javascript package'; };\n" // 86 bytes
	for p := range 1000 {
		pkg := fmt.Sprintf("pkg-%03d", p)
		if p%10 == 0 {
			pkg = fmt.Sprintf("@scope-%d/pkg-%03d", p/100, p) // scoped packages
		}
		if p%7 == 3 {
			pkg = fmt.Sprintf("pkg-%03d/node_modules/dep-%03d", p-1, p) // a nested, deduplicated-away version
		}
		for f := range 20 {
			var name string
			switch f {
			case 0:
				name = "package.json"
			case 1:
				name = "README.md"
			case 2:
				name = "LICENSE"
			case 3:
				name = "index.js"
			default:
				name = fmt.Sprintf("%s/file-%02d.js", []string{"lib", "dist", "lib/util"}[f%3], f)
			}
			fp := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(fp), 0o755))
			// 2 to 22 lines: 172 to 1,892 bytes, 1,032 on average.
			body := strings.Repeat(line, 2+(p*31+f*17)%21)
			require.NoError(t, os.WriteFile(fp, []byte(body), 0o644))
			files++
			bytes += int64(len(body))
		}
	}
	return files, bytes
}

// TestPrepareDefaultBudgetAdmitsNodeModules (issue 36 item 6): a
// component that vendors a lambda's node_modules (20,000 files, 20 MB)
// is prepared under the default budget, every file copied, and prepared
// again unchanged.
func TestPrepareDefaultBudgetAdmitsNodeModules(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and copies 20,000 files")
	}
	src := filepath.Join(t.TempDir(), "components", "lambda")
	testenv.WriteTree(t, src, map[string]string{
		"main.tf":      `resource "terraform_data" "fn" { input = filesha256("${path.module}/handler.js") }`,
		"handler.js":   "exports.handler = async () => ({ statusCode: 200 });\n",
		"package.json": `{"name": "fn", "dependencies": {}}`,
	})
	n, size := writeNodeModules(t, src)
	require.Equal(t, 20_000, n)
	require.InDelta(t, 20<<20, size, 2<<20, "about 20 MB")

	m := newManager(t)
	w, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "fn", Source: src})
	require.NoError(t, err, "a 20,000-file node_modules fits the default budget")
	require.Equal(t, n+3, countFiles(t, w.Dir), "every file of the component is in the workdir")
	require.NoError(t, w.Close())

	w, err = m.Prepare(t.Context(), Spec{Stack: "s", Instance: "fn", Source: src})
	require.NoError(t, err, "and again, unchanged")
	require.NoError(t, w.Close())
}

// countFiles counts the regular files under dir.
func countFiles(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			n++
		}
		return err
	}))
	return n
}

// TestPrepareDefaultBudgetRefusesHugeFile: a stray file larger than the
// default byte budget (a 2 GiB image left beside the configuration;
// sparse here, which counts its full length) is refused under the
// default budget with ErrBudget naming it, before it is read and before
// anything of the instance is written.
func TestPrepareDefaultBudgetRefusesHugeFile(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
	big := filepath.Join(src, "disk.img")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(DefaultBudgetBytes+1))
	require.NoError(t, f.Close())

	m := newManager(t)
	_, err = m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src})
	require.ErrorIs(t, err, ErrBudget)
	require.ErrorContains(t, err, fmt.Sprintf("%s (%d bytes)", big, DefaultBudgetBytes+1))
	require.ErrorContains(t, err, fmt.Sprintf("more than %d bytes", DefaultBudgetBytes))
	requireNoHome(t, m, "s", "i")
}

// TestPrepareRefusesModuleOutsideRepository (issue 36 item 6): a local
// module call whose directory lies outside the component's repository
// is refused by what it is, whatever the budget: ErrOutsideRepository
// naming the call, its source and the directory, nothing written. The
// repository is the nearest directory holding .git (a directory or a
// worktree's file), else the top-level directory the component lies in,
// or what Spec.Repository says; modules inside it are prepared as ever.
func TestPrepareRefusesModuleOutsideRepository(t *testing.T) {
	// requireOutside checks err names the call, its source and dir.
	requireOutside := func(t *testing.T, err error, call, source, dir, repo string) {
		t.Helper()
		require.ErrorIs(t, err, ErrOutsideRepository)
		require.NotErrorIs(t, err, ErrBudget, "refused by what it is, not by its size")
		var oe *OutsideRepositoryError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, call, oe.Call)
		require.Equal(t, source, oe.Source)
		require.Equal(t, dir, oe.Dir)
		require.Equal(t, repo, oe.Repository)
		for _, s := range []string{fmt.Sprintf("module %q", call), fmt.Sprintf("source %q", source), dir, repo} {
			require.ErrorContains(t, err, s)
		}
	}
	// layout writes a repository (with a .git dir) under a fresh top dir,
	// a tree outside it, and returns top, the repository and the
	// component dir.
	layout := func(t *testing.T, tree map[string]string) (top, repo, src string) {
		t.Helper()
		top = t.TempDir()
		testenv.WriteTree(t, top, map[string]string{
			"usr/share/doc/pkg/copyright": "doc",
			"shared/modules/net/main.tf":  `output "x" { value = 1 }`,
			"repo/.git/HEAD":              "ref: refs/heads/main\n",
			"repo/modules/vpc/main.tf":    `output "x" { value = 1 }`,
		})
		testenv.WriteTree(t, filepath.Join(top, "repo"), tree)
		return top, filepath.Join(top, "repo"), filepath.Join(top, "repo", "components", "terraform", "app")
	}

	t.Run("component call", func(t *testing.T) {
		top, repo, src := layout(t, map[string]string{
			"components/terraform/app/main.tf": `module "doc" { source = "../../../../usr/share/doc" }`,
		})
		m := newManager(t) // the default budget: this is not about size
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src})
		requireOutside(t, err, "doc", "../../../../usr/share/doc", filepath.Join(top, "usr", "share", "doc"), repo)
		requireNoHome(t, m, "s", "i")
	})
	t.Run("nested call", func(t *testing.T) {
		top, repo, src := layout(t, map[string]string{
			"components/terraform/app/main.tf": `module "vpc" { source = "../../../modules/vpc" }`,
			"modules/vpc/net.tf":               `module "net" { source = "../../../shared/modules/net" }`,
		})
		m := newManager(t)
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src})
		requireOutside(t, err, "vpc.net", "../../../shared/modules/net", filepath.Join(top, "shared", "modules", "net"), repo)
		requireNoHome(t, m, "s", "i")

		// Spec.Repository widens the repository to hold both: prepared.
		w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src, Repository: top})
		require.FileExists(t, filepath.Join(w.Home, "src", "shared", "modules", "net", "main.tf"))
	})
	t.Run("dynamic source", func(t *testing.T) {
		top, repo, src := layout(t, map[string]string{
			"components/terraform/app/main.tf": `module "net" { source = "../../../${var.dir}" }`,
		})
		m := newManager(t)
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: map[string]string{"net": "../../../../shared/modules/net"}})
		requireOutside(t, err, "net", "../../../../shared/modules/net", filepath.Join(top, "shared", "modules", "net"), repo)
		requireNoHome(t, m, "s", "i")
		// Inside the repository, the value is followed as before.
		w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src, ModuleSources: map[string]string{"net": "../../../modules/vpc"}})
		require.FileExists(t, filepath.Join(w.Home, "src", "modules", "vpc", "main.tf"))
	})
	t.Run("worktree .git file", func(t *testing.T) {
		top := t.TempDir()
		testenv.WriteTree(t, top, map[string]string{
			"wt/.git":                   "gitdir: /elsewhere/.git/worktrees/wt\n",
			"wt/app/main.tf":            `module "m" { source = "../../lib" }`,
			"lib/main.tf":               `output "x" { value = 1 }`,
			"wt/modules/inside/main.tf": `output "x" { value = 1 }`,
		})
		m := newManager(t)
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: filepath.Join(top, "wt", "app")})
		requireOutside(t, err, "m", "../../lib", filepath.Join(top, "lib"), filepath.Join(top, "wt"))
	})
	t.Run("no .git", func(t *testing.T) {
		// Without a .git, the bound is the top-level directory the
		// component lies in: a climb to the filesystem root leaves it.
		src := filepath.Join(t.TempDir(), "components", "app")
		up := strings.Repeat("../", strings.Count(src, string(filepath.Separator)))
		testenv.WriteTree(t, src, map[string]string{"main.tf": `module "doc" { source = "` + up + `usr/share/doc" }`})
		m := newManager(t)
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src})
		top := string(filepath.Separator) + strings.Split(src, string(filepath.Separator))[1]
		requireOutside(t, err, "doc", up+"usr/share/doc", filepath.Join(string(filepath.Separator), "usr", "share", "doc"), top)
		requireNoHome(t, m, "s", "i")
	})
	t.Run("refresh", func(t *testing.T) {
		// An instance prepared inside the repository, whose component
		// then calls a module outside it: the refresh is refused and the
		// home is left as it was.
		top, repo, src := layout(t, map[string]string{
			"components/terraform/app/main.tf": `module "vpc" { source = "../../../modules/vpc" }`,
		})
		m := newManager(t)
		w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
		require.NoError(t, w.Close())
		before := snapshot(t, w.Home)
		testenv.WriteTree(t, src, map[string]string{"doc.tf": `module "doc" { source = "../../../../usr/share/doc" }`})
		_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src})
		requireOutside(t, err, "doc", "../../../../usr/share/doc", filepath.Join(top, "usr", "share", "doc"), repo)
		require.Equal(t, before, snapshot(t, w.Home), "a refused refresh writes nothing")
	})
	t.Run("bad Repository", func(t *testing.T) {
		_, _, src := layout(t, map[string]string{"components/terraform/app/main.tf": `output "x" { value = 1 }`})
		m := newManager(t)
		other := t.TempDir()
		for _, bad := range []string{other, filepath.Join(other, "missing"), filepath.Join(src, "main.tf")} {
			_, err := m.Prepare(t.Context(), Spec{Stack: "s", Instance: "i", Source: src, Repository: bad})
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, fmt.Sprintf("invalid repository %q", bad))
			requireNoHome(t, m, "s", "i")
		}
	})
}
