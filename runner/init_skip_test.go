package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingTerraform writes a wrapper around the real terraform that
// appends the subcommand of every process it starts to a log, and
// returns the wrapper's path and a function that reads and clears the log.
func countingTerraform(t *testing.T, real string) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	wrapper := filepath.Join(dir, "terraform")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", log, real)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	return wrapper, func() []string {
		b, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		require.NoError(t, os.Remove(log))
		var calls []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && l != "version" { // the runner's one engine probe
				calls = append(calls, l)
			}
		}
		return calls
	}
}

// TestInitSkipped applies a unit, changes one thing init depends on (or
// one it does not), and applies again: the terraform processes of the
// second run show whether init ran. An unchanged unit starts exactly one
// terraform process.
func TestInitSkipped(t *testing.T) {
	w := newWorld(t)
	wrapper, calls := countingTerraform(t, w.tf)
	moduleTF := `module "extra" { source = "./extra" }`

	cases := []struct {
		name     string
		change   func(t *testing.T, u *Unit, home string)
		wantInit bool
	}{
		{"nothing changed", func(*testing.T, *Unit, string) {}, false},
		{"a variable file changed", func(t *testing.T, u *Unit, _ string) {
			u.Workdir.Files["terraform.tfvars.json"] = []byte(`{"name": "renamed"}`)
		}, false},
		{"the terraform binary changed", func(t *testing.T, _ *Unit, _ string) {
			b, err := os.ReadFile(wrapper)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(wrapper, append(b, "# changed\n"...), 0o755))
		}, true},
		// A backend change with resources in the state needs the caller's
		// word (TestBackendChangeRefused): here, migrate.
		{"the generated backend changed", func(t *testing.T, u *Unit, home string) {
			u.Workdir.Files = files(t, map[string]any{"name": "x"}, filepath.Join(home, "other.tfstate"))
			u.Args.MigrateState = true
		}, true},
		{"a -backend-config value changed", func(t *testing.T, u *Unit, home string) {
			u.Args.BackendConfig = []string{"path=" + filepath.Join(home, "configured.tfstate")}
			u.Args.MigrateState = true
		}, true},
		{"a module call was added", func(t *testing.T, u *Unit, _ string) {
			writeTestFile(t, filepath.Join(u.Workdir.Source, "extra", "main.tf"), `output "o" { value = 1 }`)
			writeTestFile(t, filepath.Join(u.Workdir.Source, "modules.tf"), moduleTF)
		}, true},
		{"a configuration file changed", func(t *testing.T, u *Unit, _ string) {
			writeTestFile(t, filepath.Join(u.Workdir.Source, "outputs.tf"), `output "id" { value = tfitest_item.this.id }`)
		}, true},
		{"init options changed (upgrade)", func(t *testing.T, u *Unit, _ string) { u.Args.Upgrade = true }, true},
		{"the data dir was deleted", func(t *testing.T, u *Unit, _ string) {
			wd, err := w.wd.Home(u.Workdir.Stack, u.Workdir.Instance)
			require.NoError(t, err)
			require.NoError(t, os.RemoveAll(filepath.Join(wd, ".tfisolate", "data")))
		}, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := w.component(t, fmt.Sprintf("c%d", i), itemComponent)
			home := t.TempDir()
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", fmt.Sprintf("init/%d", i), src,
				files(t, map[string]any{"name": "x"}, filepath.Join(home, "state.tfstate")))}
			rep, err := w.runner(t, WithTerraform(wrapper)).Run(testCtx(t), Apply, u)
			require.NoError(t, err)
			require.False(t, rep.Results[0].InitSkipped)
			require.Equal(t, []string{"init", "apply"}, calls())

			tc.change(t, &u, home)
			rep, err = w.runner(t, WithTerraform(wrapper)).Run(testCtx(t), Apply, u)
			require.NoError(t, err)
			got := calls()
			if tc.wantInit {
				require.Equal(t, []string{"init", "apply"}, got)
				require.False(t, rep.Results[0].InitSkipped)
			} else {
				require.Equal(t, []string{"apply"}, got, "an unchanged unit starts exactly one terraform process")
				require.True(t, rep.Results[0].InitSkipped)
			}
		})
	}
}

func writeTestFile(t *testing.T, p, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

// fakeTerraform is a stand-in for terraform in unit tests of the
// pipeline's steps: a shell script that logs its arguments and answers
// as the script body says.
func fakeTerraform(t *testing.T, body string) (path string, calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	path = filepath.Join(dir, "terraform")
	script := "#!/bin/sh\nLOG=" + log + "\nMARK=" + dir + "/initialized\necho \"$*\" >> \"$LOG\"\n" +
		"case \"$1\" in\nversion) echo 'Terraform v1.11.4'; echo 'on linux_amd64'; exit 0;;\nesac\n" + body
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path, func() []string {
		b, _ := os.ReadFile(log)
		_ = os.Remove(log)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && l != "version" {
				out = append(out, l)
			}
		}
		return out
	}
}

// TestInitFallback: when init was skipped but terraform says the working
// directory is not initialized after all, the runner runs init and
// retries the command once; a second refusal is the unit's error.
func TestInitFallback(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "plain", `resource "terraform_data" "x" {}`)
	// apply fails until init has run since the marker was last removed.
	tf, calls := fakeTerraform(t, `case "$1" in
init) touch "$MARK"; exit 0;;
apply) if [ -f "$MARK" ]; then echo '{"type":"outputs","outputs":{}}'; exit 0; fi
  echo '{"type":"diagnostic","diagnostic":{"severity":"error","summary":"Module not installed","detail":"Run \"terraform init\"."}}'; exit 1;;
esac
exit 0
`)
	mark := filepath.Join(filepath.Dir(tf), "initialized")
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "fallback", src, nil)}
	r, err := New(WithWorkdirs(w.wd), WithTerraform(tf), WithRetry(RetryPolicy{}))
	require.NoError(t, err)

	_, err = r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	require.Len(t, calls(), 2) // init, apply

	// Init is skipped, apply asks for it, init runs, apply is retried.
	require.NoError(t, os.Remove(mark))
	rep, err := r.Run(testCtx(t), Apply, u)
	require.NoError(t, err)
	got := calls()
	require.Len(t, got, 3, "%q", got)
	require.True(t, strings.HasPrefix(got[0], "apply "), "%q", got)
	require.True(t, strings.HasPrefix(got[1], "init "), "%q", got)
	require.True(t, strings.HasPrefix(got[2], "apply "), "%q", got)
	require.False(t, rep.Results[0].InitSkipped)
	log, err := os.ReadFile(rep.Results[0].Log)
	require.NoError(t, err)
	require.Contains(t, string(log), "terraform asks for init after all")

	// If apply still refuses after init, that is the error: one retry only.
	tf2, calls2 := fakeTerraform(t, `case "$1" in
apply) echo '{"type":"diagnostic","diagnostic":{"severity":"error","summary":"Module not installed","detail":"Run \"terraform init\"."}}'; exit 1;;
esac
exit 0
`)
	r2, err := New(WithWorkdirs(w.wd), WithTerraform(tf2), WithRetry(RetryPolicy{}))
	require.NoError(t, err)
	u2 := Unit{Workdir: workdirSpec("plat-ue2-dev", "fallback-2", src, nil)}
	_, err = r2.Run(testCtx(t), Init, u2)
	require.NoError(t, err)
	calls2()
	rep, err = r2.Run(testCtx(t), Apply, u2)
	require.ErrorContains(t, err, "Module not installed")
	require.Equal(t, Failed, rep.Results[0].Status)
	got = calls2()
	require.Len(t, got, 3, "apply, init, apply: %q", got)
}

// TestReconfigureSkipsUnchangedInit: Args.Reconfigure (atmos's default
// init_run_reconfigure) runs init -reconfigure only when something init
// depends on changed: a second command on an unchanged unit starts no
// init, and a changed backend is still reconfigured.
func TestReconfigureSkipsUnchangedInit(t *testing.T) {
	w := newWorld(t)
	wrapper, calls := countingTerraform(t, w.tf)
	src := w.component(t, "reconf", itemComponent)
	home := t.TempDir()
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "reconf", src, files(t, map[string]any{"name": "x"}, filepath.Join(home, "a.tfstate"))),
		Args: Args{Reconfigure: true}}
	r := w.runner(t, WithTerraform(wrapper))
	rep, err := r.Run(testCtx(t), Plan, u)
	require.NoError(t, err)
	require.Equal(t, []string{"init", "plan"}, calls())

	rep, err = r.Run(testCtx(t), Plan, u)
	require.NoError(t, err)
	require.Equal(t, []string{"plan"}, calls(), "the backend did not change: no init")
	require.True(t, rep.Results[0].InitSkipped)

	u.Workdir.Files = files(t, map[string]any{"name": "x"}, filepath.Join(home, "b.tfstate"))
	rep, err = r.Run(testCtx(t), Plan, u)
	require.NoError(t, err)
	require.Equal(t, []string{"init", "plan"}, calls(), "the backend changed: init -reconfigure")
	require.False(t, rep.Results[0].InitSkipped)
	require.Contains(t, readFile(t, rep.Results[0].Log), "reconfiguring as asked")
}
