package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// TestTofuBackendChangeRefused: under OpenTofu, a backend moved through
// an early-evaluated variable, or by an edit of a .tofu file, is refused
// as plain tofu stops and asks (ErrBackendChanged), nothing is written at
// the new path, and MigrateState moves the state.
func TestTofuBackendChangeRefused(t *testing.T) {
	e := testenv.Engine{Kind: engine.OpenTofu, Path: testenv.Tofu(t)}
	w := newEngineWorld(t, e)
	src := filepath.Join(w.dir, "components", "early")
	writeTree(t, src, earlyComponent)
	r := w.runner(t)
	unit := func(state string, args Args) Unit {
		args.Vars = map[string]string{"state_path": state, "flavor": "a"}
		return Unit{Args: args, Workdir: workdirSpec("plat-ue2-dev", "early", src, nil)}
	}
	home := func() string {
		h, err := w.wd.Home("plat-ue2-dev", "early")
		require.NoError(t, err)
		return h
	}
	_, err := r.Run(testCtx(t), Apply, unit("one.tfstate", Args{}))
	require.NoError(t, err)

	_, err = r.Run(testCtx(t), Apply, unit("two.tfstate", Args{}))
	require.ErrorIs(t, err, ErrBackendChanged, "a variable moved the backend")
	require.ErrorContains(t, err, "path=one.tfstate")
	require.ErrorContains(t, err, "path=var.state_path")

	// The same move made in the .tofu file itself.
	main := filepath.Join(src, "main.tofu")
	b, err := os.ReadFile(main)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(main, []byte(strings.Replace(string(b), "path = var.state_path", `path = "three.tfstate"`, 1)), 0o644))
	_, err = r.Run(testCtx(t), Apply, unit("one.tfstate", Args{}))
	require.ErrorIs(t, err, ErrBackendChanged, "a .tofu file moved the backend")
	var found []string
	require.NoError(t, filepath.WalkDir(home(), func(p string, d os.DirEntry, err error) error {
		if err == nil && (d.Name() == "two.tfstate" || d.Name() == "three.tfstate") {
			found = append(found, p)
		}
		return err
	}))
	require.Empty(t, found, "nothing ran against a new backend")

	_, err = r.Run(testCtx(t), Apply, unit("one.tfstate", Args{MigrateState: true}))
	require.NoError(t, err)
}

// encryptedComponent keeps its state and plans encrypted with a key from
// a passphrase (OpenTofu 1.7+), in a .tofu file.
var encryptedComponent = map[string]string{
	"main.tf": `resource "terraform_data" "a" { input = "x" }
output "a" { value = terraform_data.a.output }`,
	"encryption.tofu": `terraform {
  encryption {
    key_provider "pbkdf2" "k" { passphrase = "correct-horse-battery-staple" }
    method "aes_gcm" "m" { keys = key_provider.pbkdf2.k }
    state { method = method.aes_gcm.m }
    plan { method = method.aes_gcm.m }
  }
}`,
}

// TestTofuEncryptedStateAndPlan: with state and plan encryption, set by
// the encryption block of a .tofu file and by TF_ENCRYPTION in the unit's
// environment, SavePlan plans what plain tofu plans on a copy given the
// same key (plan JSON compared), then ApplyPlan, a clean Plan, SavePlan
// then ApplyPlan again and Output work; the state on disk is encrypted, is not taken
// for an empty one (the next plan has no changes), and Remove refuses it.
func TestTofuEncryptedStateAndPlan(t *testing.T) {
	e := testenv.Engine{Kind: engine.OpenTofu, Path: testenv.Tofu(t)}
	w := newEngineWorld(t, e)
	r := w.runner(t)
	// TF_ENCRYPTION holds the body of an encryption block.
	const envConfig = `key_provider "pbkdf2" "k" { passphrase = "correct-horse-battery-staple" }
method "aes_gcm" "m" { keys = key_provider.pbkdf2.k }
state { method = method.aes_gcm.m }
plan { method = method.aes_gcm.m }`
	for _, tc := range []struct {
		name  string
		files map[string]string
		env   map[string]string
	}{
		{"block", encryptedComponent, nil},
		{"env", map[string]string{"main.tf": encryptedComponent["main.tf"]}, map[string]string{"TF_ENCRYPTION": envConfig}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(w.dir, "components", "enc-"+tc.name)
			writeTree(t, src, tc.files)
			u := Unit{Env: tc.env, Workdir: workdirSpec("plat-ue2-dev", "enc-"+tc.name, src, nil)}

			// Side by side with plain tofu on a copy, given the same key.
			rep, err := r.Run(testCtx(t), SavePlan, u)
			require.NoError(t, err)
			got := planChanges(t, []byte(readFile(t, rep.Results[0].Plan.JSONFile)))
			cli := filepath.Join(t.TempDir(), "empty.tfrc")
			require.NoError(t, os.WriteFile(cli, nil, 0o644))
			var env []string
			for k, v := range tc.env {
				env = append(env, k+"="+v)
			}
			want := planChanges(t, plainPlan(t, e, copyOf(t, src), append(testenv.TerraformEnv(cli), env...)))
			require.Equal(t, want, got, "the runner's plan and plain tofu's")
			require.Len(t, got, 1)
			_, err = r.Run(testCtx(t), ApplyPlan, u)
			require.NoError(t, err)
			h, err := w.wd.Home("plat-ue2-dev", "enc-"+tc.name)
			require.NoError(t, err)
			var state string
			require.NoError(t, filepath.WalkDir(h, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Name() == "terraform.tfstate" && !strings.Contains(p, ".tfisolate") {
					state = p
				}
				return err
			}))
			require.NotEmpty(t, state)
			st := readFile(t, state)
			require.Contains(t, st, "encrypted_data")
			require.NotContains(t, st, "terraform_data", "the state is encrypted on disk")

			rep, err = r.Run(testCtx(t), Plan, u)
			require.NoError(t, err)
			require.False(t, rep.Results[0].HasChanges, "the encrypted state is read, not taken for an empty one")
			_, err = r.Run(testCtx(t), SavePlan, u)
			require.NoError(t, err)
			_, err = r.Run(testCtx(t), ApplyPlan, u)
			require.NoError(t, err)
			rep, err = r.Run(testCtx(t), Output, u)
			require.NoError(t, err)
			require.JSONEq(t, `"x"`, string(rep.Results[0].Outputs["a"].Value))
			require.Error(t, w.wd.Remove(testCtx(t), "plat-ue2-dev", "enc-"+tc.name, false), "an encrypted state holds resources")
		})
	}
}
