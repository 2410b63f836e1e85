package modtree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// countParses counts terraform-config-inspect's parses for the rest of
// the test.
func countParses(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	orig := loadModule
	loadModule = func(fs tfconfig.FS, dir string) (*tfconfig.Module, tfconfig.Diagnostics) {
		n.Add(1)
		return orig(fs, dir)
	}
	t.Cleanup(func() { loadModule = orig })
	return &n
}

// Many instances of one component, each in its own directory (as the
// runner walks each unit's workdir), are parsed once per distinct
// module, whatever their paths; every tree still reads as if parsed
// where it is (issue 24 item 3).
func TestWalkParsesEachDistinctModuleOnce(t *testing.T) {
	n := countParses(t)
	tag := fmt.Sprintf("# %s %d\n", t.Name(), time.Now().UnixNano()) // content no other test parsed
	comp := map[string]string{
		"main.tf":            tag + "module \"net\" {\n  source = \"./modules/net\"\n}\n",
		"modules/net/vpc.tf": tag + "variable \"cidr\" {}\nresource \"aws_vpc\" \"v\" {}\n",
	}
	base := t.TempDir()
	var trees []*Tree
	for i := range 10 {
		dir := filepath.Join(base, fmt.Sprint(i))
		testenv.WriteTree(t, dir, comp)
		tr := Walk(dir, TerraformFiles)
		require.NoError(t, tr.Err())
		trees = append(trees, tr)
	}
	require.EqualValues(t, 2, n.Load(), "two distinct modules, ten instances: two parses")
	for i, tr := range trees {
		dir := filepath.Join(base, fmt.Sprint(i))
		root := tr.Modules[dir].Config
		require.Equal(t, dir, root.Path)
		require.Equal(t, filepath.Join(dir, "main.tf"), root.ModuleCalls["net"].Pos.Filename, "positions name this instance's files")
		net := tr.Modules[filepath.Join(dir, "modules", "net")].Config
		require.Equal(t, filepath.Join(dir, "modules", "net", "vpc.tf"), net.Variables["cidr"].Pos.Filename)
		require.Contains(t, net.RequiredProviders, "aws")
	}
	trees[0].Modules[filepath.Join(base, "0")].Config.ModuleCalls["net"].Source = "./changed"
	require.Equal(t, "./modules/net", trees[1].Modules[filepath.Join(base, "1")].Config.ModuleCalls["net"].Source, "each tree owns its calls")

	// A file changed in place, same size: a new parse of that module only.
	vpc := filepath.Join(base, "3", "modules", "net", "vpc.tf")
	require.NoError(t, os.WriteFile(vpc, []byte(strings.Replace(comp["modules/net/vpc.tf"], "cidr", "cidz", 1)), 0o644))
	tr := Walk(filepath.Join(base, "3"), TerraformFiles)
	require.EqualValues(t, 3, n.Load())
	require.Contains(t, tr.Modules[filepath.Dir(vpc)].Config.Variables, "cidz", "never a stale parse")
}

// The engine's rule is part of what a parse is keyed by: one directory
// read by terraform and by OpenTofu gives each engine its own files.
func TestWalkMemoKeepsEngines(t *testing.T) {
	dir := t.TempDir()
	tag := fmt.Sprintf("# %s %d\n", t.Name(), time.Now().UnixNano())
	testenv.WriteTree(t, dir, map[string]string{
		"main.tf":     tag + "module \"a\" {\n  source = \"./a\"\n}\n",
		"main.tofu":   tag + "module \"b\" {\n  source = \"./b\"\n}\n",
		"a/main.tf":   tag,
		"b/main.tofu": tag,
	})
	for range 2 {
		require.Equal(t, []string{"a"}, keys(Walk(dir, TerraformFiles).Calls))
		tofu := Walk(dir, TofuFiles)
		require.Equal(t, []string{"b"}, keys(tofu.Calls))
		require.Equal(t, filepath.Join(dir, "main.tofu"), tofu.Modules[dir].Config.ModuleCalls["b"].Pos.Filename, "the real name, not the one terraform-config-inspect was shown")
	}
}

// A backend read from the same content at another path (a workdir copy,
// or ReadBackend called again) names the file where it was read, in the
// result and in errors.
func TestReadBackendMemoNamesEachFile(t *testing.T) {
	tag := fmt.Sprintf("# %s %d\n", t.Name(), time.Now().UnixNano())
	base := t.TempDir()
	for i := range 2 {
		dir := filepath.Join(base, fmt.Sprint(i))
		testenv.WriteTree(t, dir, map[string]string{"backend.tf": tag + "terraform {\n  backend \"local\" {\n    path = \"x.tfstate\"\n  }\n}\n"})
		b, err := ReadBackend(dir, nil, TerraformFiles)
		require.NoError(t, err)
		require.Equal(t, Backend{Type: "local", Path: "x.tfstate", File: filepath.Join(dir, "backend.tf")}, b)

		bad := filepath.Join(base, fmt.Sprintf("bad%d", i))
		testenv.WriteTree(t, bad, map[string]string{"main.tf": tag + "terraform {\n  backend \"s3\" {}\n  cloud {}\n}\n"})
		_, err = ReadBackend(bad, nil, TerraformFiles)
		require.ErrorIs(t, err, ErrBackend)
		require.EqualError(t, err, "unreadable backend configuration: "+filepath.Join(bad, "main.tf")+" declares more than one backend")
	}
}

// Walks of many copies at once (the runner walks each unit's workdir in
// the unit's goroutine) share the memo safely; run with -race.
func TestWalkMemoConcurrent(t *testing.T) {
	tag := fmt.Sprintf("# %s %d\n", t.Name(), time.Now().UnixNano())
	base := t.TempDir()
	const n = 8
	for i := range n {
		testenv.WriteTree(t, filepath.Join(base, fmt.Sprint(i)), map[string]string{
			"main.tf":    tag + "module \"m\" {\n  source = \"./m\"\n}\n",
			"m/main.tf":  tag + "variable \"v\" {}\n",
			"backend.tf": tag + "terraform {\n  backend \"local\" {}\n}\n",
		})
	}
	var wg sync.WaitGroup
	for i := range n {
		dir := filepath.Join(base, fmt.Sprint(i))
		wg.Go(func() {
			for range 5 {
				tr := Walk(dir, TerraformFiles)
				if tr.Err() != nil || tr.Modules[filepath.Join(dir, "m")].Config.Variables["v"].Pos.Filename != filepath.Join(dir, "m", "main.tf") {
					t.Errorf("walk of %s: %v", dir, tr.Err())
				}
				if b, err := ReadBackend(dir, nil, TerraformFiles); err != nil || b.File != filepath.Join(dir, "backend.tf") {
					t.Errorf("backend of %s: %+v %v", dir, b, err)
				}
			}
		})
	}
	wg.Wait()
}
