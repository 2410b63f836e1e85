package workdir

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Remove without force refuses while any state-like file records
// resources, and names it.
func TestRemoveRefusesAnyStateWithResources(t *testing.T) {
	withRes := `{"version":4,"resources":[{"type":"terraform_data"}]}`
	for _, tc := range []struct {
		name    string
		backend string
		files   map[string]string
		names   string
	}{
		{"custom-named state", "", map[string]string{"prod.tfstate": withRes}, "prod.tfstate"},
		{"backup of an emptied state", "", map[string]string{"terraform.tfstate": "", "terraform.tfstate.backup": withRes}, "terraform.tfstate.backup"},
		{"workspace state", "", map[string]string{"terraform.tfstate.d/blue/terraform.tfstate": withRes}, "blue/terraform.tfstate"},
		{"backend path", `{"terraform": {"backend": {"local": {"path": "state/current.json"}}}}`,
			map[string]string{"state/current.json": withRes}, "state/current.json"},
		{"opentofu encrypted state", "", map[string]string{"terraform.tfstate": `{"serial":1,"lineage":"l","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"AAAA","encryption_version":"v0"}`}, "terraform.tfstate"},
		{"cut-off state", "", map[string]string{"terraform.tfstate": `{"version":4,"serial":3,"resources":[{"mode":"managed","ty`}, "terraform.tfstate"},
		{"legacy state", "", map[string]string{"terraform.tfstate": `{"version":3,"serial":1,"modules":[{"path":["root"],"resources":{"aws_x.y":{}}}]}`}, "terraform.tfstate"},
		{"backend workspace_dir", `{"terraform": {"backend": {"local": {"path": "s.json", "workspace_dir": "envs"}}}}`,
			map[string]string{"envs/green/s.json": withRes}, "envs/green/s.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			testenv.WriteTree(t, src, map[string]string{"main.tf": "# x"})
			m := newManager(t)
			s := Spec{Stack: "s", Instance: "i", Source: src}
			if tc.backend != "" {
				s.Files = map[string][]byte{"backend.tf.json": []byte(tc.backend)}
			}
			w := prepare(t, m, s)
			testenv.WriteTree(t, w.Dir, tc.files)
			require.NoError(t, w.Close())
			ctx := context.Background()
			err := m.Remove(ctx, "s", "i", false)
			require.ErrorIs(t, err, ErrHasState)
			require.Contains(t, err.Error(), filepath.FromSlash(tc.names))
			require.DirExists(t, w.Home)
			require.NoError(t, m.Remove(ctx, "s", "i", true))
			require.NoDirExists(t, w.Home)
		})
	}

	// State-like files without resources, and files that only look like
	// state outside the backend's places, do not block.
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": "# x"})
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	testenv.WriteTree(t, w.Dir, map[string]string{
		"prod.tfstate":                   `{"version":4,"resources":[]}`,
		"terraform.tfstate":              "",
		".terraform.tfstate.lock.info":   `{"ID":"x"}`,
		"notes.json":                     withRes,
		".terraform/modules/m/x.tfstate": withRes, // a module's example, not ours
	})
	require.NoError(t, w.Close())
	require.NoError(t, m.Remove(context.Background(), "s", "i", false))
}
