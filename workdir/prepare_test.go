package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

var component = map[string]string{
	"main.tf":               `resource "terraform_data" "x" {}`,
	"variables.tf":          `variable "v" { default = 1 }`,
	"templates/user.tpl":    "hello ${name}",
	".terraform.lock.hcl":   "# seed v1\n",
	"terraform.tfstate":     `{"version":4,"serial":1,"lineage":"someone's stray state in the source","resources":[]}`, // no resources: does not block
	"plan.tfplan":           "stray plan",
	".terraform/junk":       "stray data dir",
	".git/HEAD":             "ref: refs/heads/main",
	"sub/terraform.tfstate": "nested stray state",
}

// sourceSet is what a workdir must contain from component.
var sourceSet = map[string]string{
	"main.tf":            component["main.tf"],
	"variables.tf":       component["variables.tf"],
	"templates/user.tpl": component["templates/user.tpl"],
}

func TestPrepareMaterializesAndIsolates(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	before := snapshot(t, src)
	m := newManager(t)

	w := prepare(t, m, Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src,
		Files: map[string][]byte{"backend.tf.json": []byte(`{"terraform":{"backend":{"local":{}}}}`)}})
	require.Equal(t, filepath.Join(m.Root(), w.ID), w.Home)
	require.Equal(t, filepath.Join(w.Home, "src"), w.Dir, "no local modules: the component is the layout root")
	require.Equal(t, map[string]string{"TF_DATA_DIR": w.DataDir}, w.Env())
	require.DirExists(t, w.DataDir)
	require.False(t, within(w.Dir, w.DataDir), "the data dir is outside the swapped config files")

	want := map[string]string{
		".terraform.lock.hcl": "# seed v1\n",
		"backend.tf.json":     `{"terraform":{"backend":{"local":{}}}}`,
	}
	for k, v := range sourceSet {
		want[k] = v
	}
	require.Equal(t, want, regularFiles(t, w.Dir))
	require.Equal(t, before, snapshot(t, src), "the source tree is never written")

	// Distinct instance, distinct home.
	w2 := prepare(t, m, Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-2", Source: src})
	require.NotEqual(t, w.Home, w2.Home)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close is idempotent")
}

func TestPrepareWarmCopiesNothing(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	var written []string
	m := newManager(t, withHook(func(p string) { written = append(written, p) }))
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"x.tfvars.json": []byte("{}")}}
	w := prepare(t, m, s)
	require.Len(t, written, len(sourceSet))
	before := snapshot(t, w.Home)
	require.NoError(t, w.Close())

	written = nil
	w = prepare(t, m, s)
	require.Empty(t, written)
	require.Equal(t, before, snapshot(t, w.Home), "an unchanged source rewrites nothing")
	require.NoError(t, w.Close())

	// New generated content is rewritten; the source is still not copied.
	s.Files["x.tfvars.json"] = []byte(`{"a":1}`)
	w = prepare(t, m, s)
	require.Empty(t, written)
	b, err := os.ReadFile(filepath.Join(w.Dir, "x.tfvars.json"))
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))
}

func TestRefreshKeepsInstanceData(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"gen.auto.tfvars.json": []byte("{}")}}
	w := prepare(t, m, s)
	owned := map[string]string{
		"terraform.tfstate":                          `{"resources":[{}]}`,
		"terraform.tfstate.backup":                   "backup",
		"terraform.tfstate.d/blue/terraform.tfstate": "ws state",
		"saved.tfplan":                               "plan",
		".terraform.lock.hcl":                        "# instance's own lock\n",
		"notes.txt":                                  "written by a run, not by us",
	}
	testenv.WriteTree(t, w.Dir, owned)
	testenv.WriteTree(t, w.DataDir, map[string]string{"terraform.tfstate": "backend cache", "providers/x": "bin"})
	dataBefore := snapshot(t, w.DataDir)
	require.NoError(t, w.Close())

	// Change one file, delete one, add one; the lock file seed is unchanged.
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "y" {}`, "new.tf": "# new"})
	require.NoError(t, os.Remove(filepath.Join(src, "templates", "user.tpl")))
	s.Files = map[string][]byte{"other.tfvars.json": []byte("{}")}
	w = prepare(t, m, s)

	want := map[string]string{
		"main.tf":           `resource "terraform_data" "y" {}`,
		"variables.tf":      component["variables.tf"],
		"new.tf":            "# new",
		"other.tfvars.json": "{}",
	}
	for k, v := range owned {
		want[k] = v
	}
	require.Equal(t, want, regularFiles(t, w.Dir))
	require.NoDirExists(t, filepath.Join(w.Dir, "templates"), "emptied source dirs are pruned")
	require.Equal(t, dataBefore, snapshot(t, w.DataDir), "the data dir is untouched")
	require.NoError(t, w.Close())

	// A changed lock file in the source wins over the instance's.
	testenv.WriteTree(t, src, map[string]string{".terraform.lock.hcl": "# seed v2\n"})
	w = prepare(t, m, s)
	b, err := os.ReadFile(filepath.Join(w.Dir, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, "# seed v2\n", string(b))
}

func TestBadInputWritesNothing(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	file := filepath.Join(src, "main.tf")
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		value string
	}{
		{"empty stack", Spec{Instance: "i", Source: src}, "stack", ""},
		{"absolute stack", Spec{Stack: "/s", Instance: "i", Source: src}, "stack", "/s"},
		{"empty instance", Spec{Stack: "s", Source: src}, "instance", ""},
		{"dotdot instance", Spec{Stack: "s", Instance: "../../etc", Source: src}, "instance", "../../etc"},
		{"absolute instance", Spec{Stack: "s", Instance: "/tmp/x", Source: src}, "instance", "/tmp/x"},
		{"escaping instance", Spec{Stack: "s", Instance: "a/../../b", Source: src}, "instance", "a/../../b"},
		{"empty source", Spec{Stack: "s", Instance: "i"}, "source", ""},
		{"missing source", Spec{Stack: "s", Instance: "i", Source: filepath.Join(src, "nope")}, "source", filepath.Join(src, "nope")},
		{"file source", Spec{Stack: "s", Instance: "i", Source: file}, "source", file},
		{"absolute file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"/etc/x": nil}}, "file", "/etc/x"},
		{"dotdot file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"../x.tf": nil}}, "file", "../x.tf"},
		{"sneaky file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"a/../../x.tf": nil}}, "file", "a/../../x.tf"},
		{"empty file name", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"": nil}}, "file", ""},
		{"state file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"terraform.tfstate": nil}}, "file", "terraform.tfstate"},
		{"data dir file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{".terraform/x": nil}}, "file", ".terraform/x"},
		{"backslash file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{`..\x.tf`: nil}}, "file", `..\x.tf`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t)
			_, err := m.Prepare(context.Background(), tc.spec)
			require.ErrorIs(t, err, ErrInvalid)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.field, ie.Field)
			require.Equal(t, tc.value, ie.Value)
			require.Contains(t, err.Error(), tc.field)
			require.Empty(t, listDir(t, m.Root()), "nothing is written under the root")
		})
	}
}

// Some generated names are only bad given the source; they are refused
// before the workdir is touched.
func TestGeneratedFileConflictingWithSource(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	before := snapshot(t, w.Home)
	require.NoError(t, w.Close())
	testenv.WriteTree(t, src, map[string]string{"new.tf": "# changed source"})
	for _, name := range []string{"templates", "main.tf/x.json"} {
		_, err := m.Prepare(context.Background(), Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{name: nil}})
		require.ErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", name))
		require.Equal(t, before, snapshot(t, w.Home), "nothing written")
	}
}

func TestRemove(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	ctx := context.Background()
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	testenv.WriteTree(t, w.Dir, map[string]string{"terraform.tfstate": `{"version":4,"resources":[{"type":"terraform_data"}]}`})
	require.NoError(t, w.Close())

	err := m.Remove(ctx, "s", "i", false)
	require.ErrorIs(t, err, ErrHasState)
	require.Contains(t, err.Error(), "terraform.tfstate")
	require.DirExists(t, w.Home)

	require.NoError(t, m.Remove(ctx, "s", "i", true))
	require.NoDirExists(t, w.Home)
	require.FileExists(t, w.LockFile, "lock files are never deleted")
	require.NoError(t, m.Remove(ctx, "s", "i", false), "removing an absent workdir is fine")

	// State without resources (after destroy) does not block removal.
	w = prepare(t, m, s)
	testenv.WriteTree(t, w.Dir, map[string]string{"terraform.tfstate": `{"version":4,"resources":[]}`})
	require.NoError(t, w.Close())
	require.NoError(t, m.Remove(ctx, "s", "i", false))
	require.NoDirExists(t, w.Home)

	_, err = m.Prepare(ctx, Spec{Stack: "s", Instance: "..", Source: src})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, m.Remove(ctx, "s", "..", true), ErrInvalid)
}

func TestRootInsideSourceIsRefused(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	before := snapshot(t, src)
	m, err := New(filepath.Join(src, ".work"))
	require.NoError(t, err)
	_, err = m.Prepare(context.Background(), Spec{Stack: "s", Instance: "i", Source: src})
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "contains the workdir root")
	require.Empty(t, listDir(t, m.Root()))
	delete(before, ".")
	after := snapshot(t, src)
	delete(after, ".")
	delete(after, ".work")
	require.Equal(t, before, after)
}

func TestGeneratedFiles(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{
		"main.tf":             []byte("# generated wins over the source"),
		"vars/x.tfvars.json":  []byte("{}"),
		".terraform.lock.hcl": []byte("# lock from the provider cache"),
	}}
	w := prepare(t, m, s)
	got := regularFiles(t, w.Dir)
	require.Equal(t, "# generated wins over the source", got["main.tf"])
	require.Equal(t, "{}", got["vars/x.tfvars.json"])
	require.Equal(t, "# lock from the provider cache", got[".terraform.lock.hcl"])
	require.NoError(t, w.Close())

	// Once no longer generated, the source's file comes back and stale
	// generated files go.
	s.Files = nil
	w = prepare(t, m, s)
	got = regularFiles(t, w.Dir)
	require.Equal(t, component["main.tf"], got["main.tf"])
	require.NotContains(t, got, "vars/x.tfvars.json")
	require.NoDirExists(t, filepath.Join(w.Dir, "vars"))
	require.Equal(t, "# lock from the provider cache", got[".terraform.lock.hcl"], "the instance's lock file is its own")
}
