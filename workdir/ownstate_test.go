package workdir

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

const (
	stateWith2   = `{"version":4,"serial":3,"lineage":"src-lineage","resources":[{"mode":"managed","type":"terraform_data","name":"a"},{"mode":"managed","type":"terraform_data","name":"b"}]}`
	stateWith0   = `{"version":4,"serial":1,"lineage":"src-lineage","resources":[]}`
	stateOutputs = `{"version":4,"serial":2,"lineage":"src-lineage","outputs":{"foo":{"type":"string","value":"bar"}},"resources":[]}`
	encState     = `{"serial":1,"lineage":"enc-lineage","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"AAAA","encryption_version":"v0"}`
	ownStateWith = `{"version":4,"serial":9,"lineage":"own-lineage","resources":[{"mode":"managed","type":"terraform_data","name":"own"}]}`
)

// A component source holding state with resources for the backend it uses
// is refused, naming the file and its resource count, while the instance
// has no state of its own; so is one that records only outputs (plain
// terraform plans their deletion from it: found by the sweep of
// Terraform's fixtures, internal/suites/conformance); a source state that
// records nothing, or one the backend does not use, is not.
func TestSourceStateRefusedUntilAdopted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		refused string // source file named, "" when not refused
		count   string
	}{
		{"default file", map[string]string{"terraform.tfstate": stateWith2}, "terraform.tfstate", "(2 resources)"},
		{"workspace file", map[string]string{"terraform.tfstate.d/blue/terraform.tfstate": stateWith2}, "terraform.tfstate.d/blue/terraform.tfstate", "(2 resources)"},
		{"backend path", map[string]string{"backend.tf": `terraform {
  backend "local" { path = "state/current.json" }
}`, "state/current.json": stateWith2}, "state/current.json", "(2 resources)"},
		{"encrypted", map[string]string{"terraform.tfstate": encState}, "terraform.tfstate", "(resources unknown"},
		{"cut off", map[string]string{"terraform.tfstate": stateWith2[:40]}, "terraform.tfstate", "(resources unknown"},
		{"outputs only", map[string]string{"terraform.tfstate": stateOutputs}, "terraform.tfstate", "(0 resources, 1 output)"},
		{"no resources", map[string]string{"terraform.tfstate": stateWith0}, "", ""},
		{"empty", map[string]string{"terraform.tfstate": ""}, "", ""},
		// Terraform's default places beside another backend are refused
		// too (TestLeftStateRefused); a file no terraform reads is not.
		{"not the backend's", map[string]string{"backend.tf": `terraform {
  backend "local" { path = "state/current.json" }
}`, "prod.tfstate": stateWith2}, "", ""},
		{"remote backend", map[string]string{"backend.tf": `terraform {
  backend "s3" {}
}`, "prod.tfstate": stateWith2}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`})
			testenv.WriteTree(t, src, tc.files)
			m := newManager(t)
			s := Spec{Stack: "s", Instance: "i", Source: src}
			w, err := m.Prepare(context.Background(), s)
			if tc.refused == "" {
				require.NoError(t, err)
				require.NoError(t, w.Close())
				return
			}
			require.ErrorIs(t, err, ErrSourceState)
			var se *SourceStateError
			require.ErrorAs(t, err, &se)
			file := filepath.Join(src, filepath.FromSlash(tc.refused))
			require.Len(t, se.Files, 1)
			require.Equal(t, file, se.Files[0].Path)
			require.Contains(t, err.Error(), file+" "+tc.count)
			require.Contains(t, err.Error(), "AdoptState")
			home, err := m.Home("s", "i")
			require.NoError(t, err)
			require.NoFileExists(t, filepath.Join(home, metaDir, stateRecordFile))

			// The lock was released: adopting works at once.
			s.AdoptState = true
			w = prepare(t, m, s)
			got, err := os.ReadFile(filepath.Join(w.Dir, filepath.FromSlash(tc.refused)))
			require.NoError(t, err)
			require.Equal(t, tc.files[tc.refused], string(got))
			fi, err := os.Stat(filepath.Join(w.Dir, filepath.FromSlash(tc.refused)))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "state holds secrets")
			require.NoError(t, w.Close())
		})
	}
}

// Adoption copies once: later Prepares, with or without AdoptState, never
// copy the source's state again, whatever the source then holds; and an
// instance that has state with resources of its own refuses to adopt,
// copying nothing, while it runs on its own state without AdoptState.
func TestAdoptStateOnce(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	m := newManager(t)
	ctx := context.Background()
	s := Spec{Stack: "s", Instance: "i", Source: src, AdoptState: true}
	w := prepare(t, m, s)
	state := filepath.Join(w.Dir, "terraform.tfstate")
	require.Equal(t, stateWith2, readFileString(t, state))
	// The instance's terraform moves on: a new serial, then nothing left.
	testenv.WriteTree(t, w.Dir, map[string]string{"terraform.tfstate": stateWith0})
	require.NoError(t, w.Close())
	for _, adopt := range []bool{true, false} {
		s.AdoptState = adopt
		w = prepare(t, m, s)
		require.Equal(t, stateWith0, readFileString(t, state), "adopt=%v: never copied again", adopt)
		require.NoError(t, w.Close())
	}
	rec := readStateRecord(w.Home)
	require.Len(t, rec.Adopted, 1)
	require.Equal(t, filepath.Join(src, "terraform.tfstate"), rec.Adopted[0].Source)
	require.Equal(t, 2, rec.Adopted[0].Resources)

	// Another instance with state of its own.
	other := Spec{Stack: "s", Instance: "j", Source: src}
	_, err := m.Prepare(ctx, other)
	require.ErrorIs(t, err, ErrSourceState)
	home, err := m.Home("s", "j")
	require.NoError(t, err)
	own := filepath.Join(home, srcDir, "terraform.tfstate")
	testenv.WriteTree(t, filepath.Dir(own), map[string]string{"terraform.tfstate": ownStateWith})
	other.AdoptState = true
	_, err = m.Prepare(ctx, other)
	require.ErrorIs(t, err, ErrSourceState)
	var se *SourceStateError
	require.ErrorAs(t, err, &se)
	require.NotNil(t, se.Blocking)
	require.Equal(t, own, se.Blocking.Path)
	require.Contains(t, err.Error(), own+" (1 resource)")
	require.Equal(t, ownStateWith, readFileString(t, own), "nothing copied")
	other.AdoptState = false
	w = prepare(t, m, other)
	require.Equal(t, ownStateWith, readFileString(t, own), "the instance runs on its own state")
	require.NoError(t, w.Close())
}

// recordedLocal is plain terraform's record of a local backend with path
// p in a component's .terraform/terraform.tfstate (its format: version 3
// with a backend section); the hash matches no configuration, so plain
// terraform always finds the backend changed.
func recordedLocal(p string) string {
	return `{"version":3,"serial":0,"lineage":"rec","backend":{"type":"local","config":{"path":"` + p +
		`","workspace_dir":null},"hash":1},"modules":[{"path":["root"],"outputs":{},"resources":{},"depends_on":[]}]}`
}

// State the component's backend does not use, but that plain terraform
// run in the component dir would stop to ask about migrating, is refused
// as well, naming the file, and AdoptState never takes it: terraform's
// default terraform.tfstate(.d) beside another backend, and the state of
// the local backend the component's own .terraform records when the
// configuration names another (found by the sweep of Terraform's
// fixtures, internal/suites/conformance). Real plain terraform, on a copy of
// each refused source, stops too. Left state that records nothing, a
// recorded backend still in use, and a record naming a path outside the
// component are no reason to refuse.
func TestLeftStateRefused(t *testing.T) {
	pathBackend := func(p string) string {
		return "terraform {\n  backend \"local\" { path = \"" + p + "\" }\n}"
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		refused string // the left file named, "" when not refused
		plain   bool   // run plain terraform init on a copy: it must fail
	}{
		{"default beside a remote backend", map[string]string{"backend.tf": `terraform {
  backend "s3" {}
}`, "terraform.tfstate": stateWith2}, "terraform.tfstate", false},
		{"default beside a path backend", map[string]string{"backend.tf": pathBackend("state/current.json"),
			"terraform.tfstate": stateOutputs}, "terraform.tfstate", true},
		{"workspace beside a workspace_dir", map[string]string{"backend.tf": `terraform {
  backend "local" { workspace_dir = "envs" }
}`, "terraform.tfstate.d/blue/terraform.tfstate": stateOutputs}, "terraform.tfstate.d/blue/terraform.tfstate", true},
		{"recorded backend changed", map[string]string{"backend.tf": pathBackend("new.tfstate"),
			".terraform/terraform.tfstate": recordedLocal("old.tfstate"), "old.tfstate": stateWith2}, "old.tfstate", true},
		{"recorded backend unset", map[string]string{
			".terraform/terraform.tfstate": recordedLocal("old.tfstate"), "old.tfstate": stateOutputs}, "old.tfstate", true},
		{"recorded backend in use", map[string]string{"backend.tf": pathBackend("cur.tfstate"),
			".terraform/terraform.tfstate": recordedLocal("cur.tfstate"), "cur.tfstate": stateWith0}, "", false},
		{"recorded state records nothing", map[string]string{"backend.tf": pathBackend("new.tfstate"),
			".terraform/terraform.tfstate": recordedLocal("old.tfstate"), "old.tfstate": stateWith0}, "", false},
		{"recorded path outside", map[string]string{"backend.tf": pathBackend("new.tfstate"),
			".terraform/terraform.tfstate": recordedLocal("../outside.tfstate")}, "", false},
		{"default records nothing", map[string]string{"backend.tf": `terraform {
  backend "s3" {}
}`, "terraform.tfstate": stateWith0}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			src := filepath.Join(base, "c")
			testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`})
			testenv.WriteTree(t, src, tc.files)
			testenv.WriteTree(t, base, map[string]string{"outside.tfstate": stateWith2})
			m := newManager(t)
			s := Spec{Stack: "s", Instance: "i", Source: src}
			w, err := m.Prepare(context.Background(), s)
			if tc.refused == "" {
				require.NoError(t, err)
				require.NoError(t, w.Close())
				return
			}
			var se *SourceStateError
			require.ErrorAs(t, err, &se)
			require.ErrorIs(t, err, ErrSourceState)
			file := filepath.Join(src, filepath.FromSlash(tc.refused))
			require.Empty(t, se.Files)
			require.Len(t, se.Left, 1)
			require.Equal(t, file, se.Left[0].Path)
			require.Contains(t, err.Error(), file+" (")
			require.Contains(t, err.Error(), "terraform init -migrate-state")

			// Adoption does not take it: refused again, nothing copied.
			s.AdoptState = true
			_, err = m.Prepare(context.Background(), s)
			require.ErrorIs(t, err, ErrSourceState)
			home, err := m.Home("s", "i")
			require.NoError(t, err)
			require.NoFileExists(t, filepath.Join(home, metaDir, stateRecordFile))
			require.NoFileExists(t, filepath.Join(home, srcDir, filepath.FromSlash(tc.refused)))

			if tc.plain {
				bin, env := tfEnv(t)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cp := filepath.Join(t.TempDir(), "c")
				require.NoError(t, os.CopyFS(cp, os.DirFS(src)))
				code, out := plainTerraform(t, ctx, bin, cp, env, "init", "-input=false", "-no-color")
				require.NotZero(t, code, "plain terraform stops at that state too:\n%s", out)
				require.Regexp(t, `migrat|Backend configuration changed`, out)
			}
		})
	}
}

func readFileString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// plainTerraform runs terraform in dir as a user would, with env (its own
// .terraform in dir), and returns its exit code and combined output.
func plainTerraform(t *testing.T, ctx context.Context, bin, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, "%s", out)
	return 0, string(out)
}

// A root module applied with plain terraform keeps its state in the
// component dir: Prepare refuses the instance naming that file and its
// two resources; adopted, the instance plans no changes, exactly as plain
// terraform does in the component dir.
func TestAdoptedStatePlansLikePlainTerraform(t *testing.T) {
	bin, env := tfEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := t.TempDir()
	testenv.WriteTree(t, src, redisComponent)
	testenv.WriteTree(t, src, map[string]string{"terraform.tfvars": `name = "adopted"`})
	code, out := plainTerraform(t, ctx, bin, src, env, "init", "-input=false", "-no-color")
	require.Zero(t, code, out)
	code, out = plainTerraform(t, ctx, bin, src, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Zero(t, code, out)
	code, out = plainTerraform(t, ctx, bin, src, env, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	require.Zero(t, code, "plain terraform plans no changes: %s", out)

	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	_, err := m.Prepare(ctx, s)
	require.ErrorIs(t, err, ErrSourceState)
	require.Contains(t, err.Error(), filepath.Join(src, "terraform.tfstate")+" (2 resources)")

	s.AdoptState = true
	w := prepare(t, m, s)
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	_, err = terraform(ctx, bin, w, env, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	require.NoError(t, err, "the adopted instance plans no changes, as plain terraform does")
	require.Equal(t, []string{"terraform_data.endpoint", "tfitest_item.cluster"}, stateList(t, ctx, bin, w, env))
}

// A state file the configuration only reads (a local
// terraform_remote_state path inside the component) is an input: it is
// copied, refreshed when the source's changes, and not counted as the
// instance's state by Remove.
func TestRemoteStateInputIsCopied(t *testing.T) {
	bin := testenv.Terraform(t)
	cli := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	env := testenv.TerraformEnv(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The network's state, made by plain terraform.
	net := t.TempDir()
	applyNet := func(vpc string) string {
		testenv.WriteTree(t, net, map[string]string{"main.tf": `output "vpc" { value = "` + vpc + `" }`})
		code, out := plainTerraform(t, ctx, bin, net, env, "apply", "-auto-approve", "-input=false", "-no-color")
		require.Zero(t, code, out)
		return readFileString(t, filepath.Join(net, "terraform.tfstate"))
	}
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{
		"main.tf": `
data "terraform_remote_state" "net" {
  backend = "local"
  config = {
    path = "inputs/network.tfstate"
  }
}
output "vpc" { value = data.terraform_remote_state.net.outputs.vpc }
`,
		"inputs/network.tfstate": applyNet("vpc-1"),
	})

	m := newManager(t)
	s := Spec{Stack: "s", Instance: "i", Source: src}
	w := prepare(t, m, s)
	require.Equal(t, readFileString(t, filepath.Join(src, "inputs", "network.tfstate")), readFileString(t, filepath.Join(w.Dir, "inputs", "network.tfstate")))
	mustTerraform(t, ctx, bin, w, env, "init", "-input=false", "-no-color")
	mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Equal(t, "vpc-1", mustTerraform(t, ctx, bin, w, env, "output", "-raw", "vpc"))
	d1 := w.Digest
	require.NoError(t, w.Close())

	testenv.WriteTree(t, src, map[string]string{"inputs/network.tfstate": applyNet("vpc-2")})
	w = prepare(t, m, s)
	require.NotEqual(t, d1, w.Digest, "the input is part of what was materialized")
	mustTerraform(t, ctx, bin, w, env, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Equal(t, "vpc-2", mustTerraform(t, ctx, bin, w, env, "output", "-raw", "vpc"))
	require.NoError(t, w.Close())

	// Remove counts the instance's own state (it records the data
	// source), never the untouched input.
	err := m.Remove(ctx, "s", "i", false)
	require.ErrorIs(t, err, ErrHasState)
	require.Contains(t, err.Error(), filepath.Join(w.Dir, "terraform.tfstate"))
	require.NotContains(t, err.Error(), "network.tfstate")
	require.False(t, strings.Contains(err.Error(), "inputs"), "%v", err)
}
