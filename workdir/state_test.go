package workdir

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// An OpenTofu encrypted state (JSON with encrypted_data and no resources)
// is never taken for an empty one: Remove without force refuses it, and
// it is a complete state for CheckState.
func TestEncryptedStateCountsAsResources(t *testing.T) {
	tofu := testenv.Tofu(t)
	cli := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	env := testenv.TerraformEnv(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `
terraform {
  encryption {
    key_provider "pbkdf2" "k" {
      passphrase = "a-test-passphrase-of-some-length"
    }
    method "aes_gcm" "m" {
      keys = key_provider.pbkdf2.k
    }
    state {
      method = method.aes_gcm.m
    }
  }
}
resource "terraform_data" "x" { input = "kept" }
`})
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "s", Instance: "i", Source: src})
	mustTerraform(t, ctx, tofu, w, env, "init", "-input=false", "-no-color")
	mustTerraform(t, ctx, tofu, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	state := filepath.Join(w.Dir, "terraform.tfstate")
	raw := readFileString(t, state)
	require.Contains(t, raw, `"encrypted_data"`)
	require.NotContains(t, raw, `"resources"`)
	require.NoError(t, w.CheckState(""), "an encrypted state is a complete document")
	require.NoError(t, w.Close())

	err := m.Remove(ctx, "s", "i", false)
	require.ErrorIs(t, err, ErrHasState)
	require.Contains(t, err.Error(), state)
	require.Equal(t, raw, readFileString(t, state), "the only copy of the state is kept")
}

// CheckState refuses an emptied or cut-off state when a backup beside it,
// or the workdir's record of a complete state seen there, shows the
// instance had one; it names the file and the backup and never restores
// the backup. An instance that never had a state is not refused.
func TestCheckStateRefusesDamagedState(t *testing.T) {
	good := `{"version":4,"serial":7,"lineage":"l-1","resources":[{"mode":"managed","type":"terraform_data","name":"x"}]}`
	for _, tc := range []struct {
		name    string
		backend string
		ws      string // workspace given to CheckState
		place   string // the state file, relative to the component
		state   string
		backup  bool
		record  bool // a complete state was checked there before
		refused bool
	}{
		{"empty with backup", "", "", "terraform.tfstate", "", true, false, true},
		{"whitespace with backup", "", "", "terraform.tfstate", "\n", true, false, true},
		{"cut off with backup", "", "", "terraform.tfstate", good[:50], true, false, true},
		{"cut off alone", "", "", "terraform.tfstate", good[:50], false, false, true},
		{"empty with record", "", "", "terraform.tfstate", "", false, true, true},
		{"empty, never had a state", "", "", "terraform.tfstate", "", false, false, false},
		{"complete", "", "", "terraform.tfstate", good, true, true, false},
		{"workspace", "", "blue", "terraform.tfstate.d/blue/terraform.tfstate", "", true, false, true},
		{"backend path", `{"terraform": {"backend": {"local": {"path": "st/x.json"}}}}`, "", "st/x.json", "", true, false, true},
		{"backend workspace_dir", `{"terraform": {"backend": {"local": {"workspace_dir": "envs"}}}}`, "green", "envs/green/terraform.tfstate", good[:30], false, false, true},
		{"remote backend", `{"terraform": {"backend": {"s3": {}}}}`, "", "terraform.tfstate", "", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "x" {}`})
			m := newManager(t)
			s := Spec{Stack: "s", Instance: "i", Source: src}
			if tc.backend != "" {
				s.Files = map[string][]byte{"backend.tf.json": []byte(tc.backend)}
			}
			w := prepare(t, m, s)
			file := filepath.Join(w.Dir, filepath.FromSlash(tc.place))
			if tc.record {
				testenv.WriteTree(t, w.Dir, map[string]string{tc.place: good})
				require.NoError(t, w.CheckState(tc.ws))
			}
			testenv.WriteTree(t, w.Dir, map[string]string{tc.place: tc.state})
			if tc.backup {
				testenv.WriteTree(t, w.Dir, map[string]string{tc.place + ".backup": good})
			}
			err := w.CheckState(tc.ws)
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStateDamaged)
			var de *DamagedStateError
			require.ErrorAs(t, err, &de)
			require.Equal(t, file, de.File)
			require.Contains(t, err.Error(), file)
			if tc.backup {
				require.Contains(t, err.Error(), "not restored automatically")
				require.Equal(t, file+".backup", de.Backup)
				require.Contains(t, err.Error(), "cp "+file+".backup "+file)
			}
			if tc.record {
				require.Equal(t, "l-1", de.Lineage)
				require.Equal(t, uint64(7), de.Serial)
			}
			require.Equal(t, tc.state, readFileString(t, file), "nothing restored")
		})
	}
}
