package workdir

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Check refuses what Prepare refuses before its lock, and writes nothing.
func TestCheck(t *testing.T) {
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
		{"dotdot instance", Spec{Stack: "s", Instance: "../../etc", Source: src}, "instance", "../../etc"},
		{"empty source", Spec{Stack: "s", Instance: "i"}, "source", ""},
		{"missing source", Spec{Stack: "s", Instance: "i", Source: filepath.Join(src, "nope")}, "source", filepath.Join(src, "nope")},
		{"file source", Spec{Stack: "s", Instance: "i", Source: file}, "source", file},
		{"dotdot file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"../x.tf": nil}}, "file", "../x.tf"},
		{"state file", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"prod.tfstate": nil}}, "file", "prod.tfstate"},
		{"backend path", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{
			"backend.tf.json":    []byte(`{"terraform": {"backend": {"local": {"path": "state/current.json", "workspace_dir": "envs"}}}}`),
			"state/current.json": nil,
		}}, "file", "state/current.json"},
		{"backend workspace dir", Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{
			"backend.tf.json": []byte(`{"terraform": {"backend": {"local": {"workspace_dir": "envs"}}}}`),
			"envs/x.json":     nil,
		}}, "file", "envs/x.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t)
			_, err := m.Check(tc.spec)
			require.ErrorIs(t, err, ErrInvalid)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.field, ie.Field)
			require.Equal(t, tc.value, ie.Value)
			require.Empty(t, listDir(t, m.Root()))
		})
	}

	// A good spec: the ID, no lock taken (Check answers while another
	// holds the instance), nothing written.
	m := newManager(t)
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src,
		Files: map[string][]byte{"backend.tf.json": []byte("{}")}}
	want, err := ID(s.Stack, s.Instance)
	require.NoError(t, err)
	id, err := m.Check(s)
	require.NoError(t, err)
	require.Equal(t, want, id)
	require.Empty(t, listDir(t, m.Root()), "Check writes nothing")
	w := prepare(t, m, s)
	before := snapshot(t, m.Root())
	id, err = m.Check(s)
	require.NoError(t, err)
	require.Equal(t, w.ID, id)
	require.Equal(t, before, snapshot(t, m.Root()))
}

// The root must not lie inside the source, nor the source inside the
// root, even when one is reached through a symlink.
func TestRootAndSourceThroughSymlinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout func(t *testing.T, src string) (root, source string)
		reason string
	}{
		{"root inside source through a link", func(t *testing.T, src string) (string, string) {
			link := filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Symlink(src, link))
			return filepath.Join(link, ".work"), src
		}, "contains the workdir root"},
		{"source given through a link", func(t *testing.T, src string) (string, string) {
			link := filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Symlink(src, link))
			return filepath.Join(src, ".work"), link
		}, "contains the workdir root"},
		{"source inside the root", func(t *testing.T, src string) (string, string) {
			root := filepath.Join(t.TempDir(), "root")
			inside := filepath.Join(root, "component")
			testenv.WriteTree(t, inside, map[string]string{"main.tf": "# x"})
			return root, inside
		}, "lies inside the workdir root"},
		{"source inside the root through a link", func(t *testing.T, src string) (string, string) {
			root := filepath.Join(t.TempDir(), "root")
			testenv.WriteTree(t, root, map[string]string{"component/main.tf": "# x"})
			link := filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Symlink(filepath.Join(root, "component"), link))
			return root, link
		}, "lies inside the workdir root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			testenv.WriteTree(t, src, component)
			root, source := tc.layout(t, src)
			m, err := New(root)
			require.NoError(t, err)
			before := snapshot(t, src)
			rootBefore := snapshot(t, m.Root())
			s := Spec{Stack: "s", Instance: "i", Source: source}
			_, err = m.Check(s)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.reason)
			_, err = m.Prepare(context.Background(), s)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), tc.reason)
			require.Equal(t, rootBefore, snapshot(t, m.Root()), "nothing written under the root")
			after := snapshot(t, src)
			require.Equal(t, before, after, "the source is untouched")
		})
	}
}

// Holder names who kept Prepare waiting, and is nil when nobody did.
func TestHolderReported(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	root := filepath.Join(t.TempDir(), "root")
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-2", Source: src}
	h := &signalHandler{Handler: slog.DiscardHandler, waiting: make(chan struct{})}
	m, err := New(root, WithLockRetry(time.Millisecond), WithLogger(slog.New(h)))
	require.NoError(t, err)

	w := prepare(t, m, s)
	require.Nil(t, w.Holder, "the lock was free")
	require.NoError(t, w.Close())

	holder := startChild(t, "hold", root, s)
	holder.Expect(t, "locked")
	got := make(chan *Workdir, 1)
	errc := make(chan error, 1)
	go func() {
		w, err := m.Prepare(context.Background(), s)
		errc <- err
		got <- w
	}()
	<-h.waiting
	require.NoError(t, holder.Stdin.Close()) // let go only once Prepare waits
	require.NoError(t, <-errc)
	w = <-got
	defer w.Close()
	require.NoError(t, holder.Wait())
	require.NotNil(t, w.Holder)
	require.Equal(t, holder.PID(), w.Holder.PID)
	host, _ := os.Hostname()
	require.Equal(t, host, w.Holder.Host)
	require.Positive(t, w.LockWait)
}

// Digest changes exactly when what terraform reads changes.
func TestDigest(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"x.auto.tfvars.json": []byte(`{"a":1}`)}}
	digestOf := func(s Spec) string {
		t.Helper()
		w, err := m.Prepare(context.Background(), s)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.Len(t, w.Digest, 64)
		return w.Digest
	}
	d1 := digestOf(s)
	require.Equal(t, d1, digestOf(s), "nothing changed")

	// Instance-owned data is not configuration.
	w := prepare(t, m, s)
	testenv.WriteTree(t, w.Dir, map[string]string{
		"terraform.tfstate":   `{"resources":[{}]}`,
		".terraform.lock.hcl": "# rewritten by terraform init\n",
		"saved.tfplan":        "plan",
	})
	testenv.WriteTree(t, w.DataDir, map[string]string{"providers/x": "bin"})
	require.NoError(t, w.Close())
	require.Equal(t, d1, digestOf(s))
	// Nor is a source file that is never copied.
	testenv.WriteTree(t, src, map[string]string{"prod.tfstate": `{"resources":[{}]}`, ".terraform/x": "y"})
	require.Equal(t, d1, digestOf(s))

	// The same content for another instance gives the same digest.
	other := s
	other.Instance = "j"
	require.Equal(t, d1, digestOf(other))

	// A generated file, a source file, a module file each change it; going
	// back restores it.
	s2 := s
	s2.Files = map[string][]byte{"x.auto.tfvars.json": []byte(`{"a":2}`)}
	d2 := digestOf(s2)
	require.NotEqual(t, d1, d2)
	require.Equal(t, d1, digestOf(s))

	testenv.WriteTree(t, src, map[string]string{"variables.tf": `variable "v" { default = 2 }`})
	d3 := digestOf(s)
	require.NotEqual(t, d1, d3)
	require.NoError(t, os.Chmod(filepath.Join(src, "variables.tf"), 0o755))
	d4 := digestOf(s)
	require.NotEqual(t, d3, d4, "the mode is part of what terraform sees (templatefile, scripts)")
	require.NoError(t, os.Chmod(filepath.Join(src, "variables.tf"), 0o644))
	testenv.WriteTree(t, src, map[string]string{"variables.tf": component["variables.tf"]})
	require.Equal(t, d1, digestOf(s))

	// A changed seed lock file replaces the instance's, so it counts.
	testenv.WriteTree(t, src, map[string]string{".terraform.lock.hcl": "# seed v2\n"})
	require.NotEqual(t, d1, digestOf(s))
}

// SourceDigest is Digest without the generated files: a generated file
// changes Digest alone, a source file both.
func TestSourceDigest(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src, Files: map[string][]byte{"x.auto.tfvars.json": []byte(`{"a":1}`)}}
	digests := func(s Spec) (string, string) {
		t.Helper()
		w, err := m.Prepare(context.Background(), s)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.Len(t, w.SourceDigest, 64)
		return w.Digest, w.SourceDigest
	}
	d1, s1 := digests(s)
	s.Files = map[string][]byte{"x.auto.tfvars.json": []byte(`{"a":2}`)}
	d2, s2 := digests(s)
	require.NotEqual(t, d1, d2)
	require.Equal(t, s1, s2, "a generated file is not the source's")
	testenv.WriteTree(t, src, map[string]string{"extra.tf": `variable "e" {}`})
	d3, s3 := digests(s)
	require.NotEqual(t, d2, d3)
	require.NotEqual(t, s2, s3)
}
