package workdir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// fuzzSource is a component with a local module, so the materialized
// layout is the common ancestor and relative paths matter.
var fuzzSource = map[string]string{
	"components/terraform/c/main.tf":      "module \"m\" {\n  source = \"../../../modules/m\"\n}\n",
	"components/terraform/c/variables.tf": "variable \"name\" {}\n",
	"modules/m/main.tf":                   "output \"x\" {\n  value = 1\n}\n",
}

// FuzzPrepareNames feeds Prepare arbitrary stack, instance and
// generated-file names. Each input ends in an error that names it, or in
// a workdir strictly inside the root holding the generated files; never in
// a panic, a write outside the root, or a write to the source.
func FuzzPrepareNames(f *testing.F) {
	for _, s := range [][4]string{
		{"plat-ue2-dev", "elasticache/redis-cluster-1", "backend.tf.json", "x.auto.tfvars.json"},
		{"s", "../../etc", "a.tf", "b.tf"},
		{"s", "i", "../x.tf", "y.tf"},
		{"s", "i", "a/../../x.tf", "y.tf"},
		{"s", "i", "../../../modules/m/main.tf", "y.tf"},
		{"s", "i", "sub/x.tf", "sub"},
		{"s", "i", "sub/x.tf", "sub/x.tf/y"},
		{"s", "i", "terraform.tfstate", "y.tf"},
		{"s", "i", ".terraform/x", "y.tf"},
		{"s", "i", ".tfisolate-tmp-x", "y.tf"},
		{"s", "i", `..\x.tf`, "y.tf"},
		{"s", "i", "/etc/passwd", "y.tf"},
		{"..", "..", ".", "./x"},
		{"CON", "NUL/aux", "main.tf", "variables.tf"},
		{"s", "i", strings.Repeat("n", 300), "y.tf"},
		{"s", "i", "a\x00b", "y.tf"},
		{"ü", "日本/名前", "ファイル.tf", "y.tf"},
	} {
		f.Add(s[0], s[1], s[2], s[3], []byte("{}"))
	}
	src := f.TempDir()
	testenv.WriteTree(f, src, fuzzSource)
	component := filepath.Join(src, "components", "terraform", "c")
	before := snapshot(f, src)

	f.Fuzz(func(t *testing.T, stack, instance, file1, file2 string, data []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		m, err := New(root)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{file1: data, file2: []byte("second")}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w, err := m.Prepare(ctx, Spec{Stack: stack, Instance: instance, Source: component, Files: files})

		if ents, _ := os.ReadDir(parent); len(ents) != 1 || ents[0].Name() != "root" {
			t.Fatalf("Prepare(%q, %q, %q, %q) wrote outside the root: %v", stack, instance, file1, file2, ents)
		}
		if after := snapshot(t, src); !fuzzEqualMaps(before, after) {
			t.Fatalf("Prepare(%q, %q, %q, %q) changed the source", stack, instance, file1, file2)
		}
		if err != nil {
			var ie *InputError
			switch {
			case errors.As(err, &ie):
				if ie.Value != stack && ie.Value != instance && ie.Value != file1 && ie.Value != file2 {
					t.Fatalf("error %v names %q, none of the inputs", err, ie.Value)
				}
				if left := listDir(t, root); len(left) != 0 {
					t.Fatalf("refused input %v left files under the root: %v", err, left)
				}
			case errors.Is(err, ErrInvalid):
				t.Fatalf("ErrInvalid without an *InputError: %v", err)
			default:
				// What the filesystem refuses (a name too long for it) is
				// not knowable in advance; it must still be an error of
				// the filesystem, naming the path.
				var pe *fs.PathError
				var le *os.LinkError
				if !errors.As(err, &pe) && !errors.As(err, &le) {
					t.Fatalf("Prepare(%q, %q, %q, %q): unexpected error %v", stack, instance, file1, file2, err)
				}
			}
			return
		}
		defer w.Close()
		for _, p := range []string{w.Dir, w.DataDir, w.Home, w.LockFile} {
			fuzzInside(t, root, p)
		}
		for name, want := range files {
			p := filepath.Join(w.Dir, filepath.FromSlash(name))
			fuzzInside(t, root, p)
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				t.Fatalf("generated file %q: %v", name, err)
			}
			fuzzInside(t, root, real)
			got, err := os.ReadFile(real)
			if err != nil || string(got) != string(want) {
				t.Fatalf("generated file %q holds %q (%v), want %q", name, got, err, want)
			}
		}
	})
}

// fuzzInside fails unless p lies strictly inside root.
func fuzzInside(t *testing.T, root, p string) {
	t.Helper()
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		t.Fatalf("%s is not strictly inside the root %s", p, root)
	}
}

func fuzzEqualMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
