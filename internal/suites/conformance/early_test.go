package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// earlyFixtures are each engine's own fixtures of module sources and
// versions built from variables, and the values its own tests give them
// (-var module_name=example, -var src=./mod, a test.tfvars beside the
// configuration): Terraform's dynamic-module-sources dir (1.15), and
// OpenTofu's init-module-variable-* fixtures (1.8).
var earlyFixtures = map[engine.Kind]struct {
	since string   // the engine version that introduced them
	dirs  []string // globs under the engine's module
	vars  map[string]string
}{
	engine.Terraform: {"1.15.0", []string{"internal/command/testdata/dynamic-module-sources/*"}, map[string]string{"module_name": "example"}},
	engine.OpenTofu: {"1.8.0", []string{"internal/command/testdata/init-module-variable-source*", "internal/command/testdata/init-module-early-eval"},
		map[string]string{"src": "./mod", "module_source": "./mod"}},
}

// TestEarlyEvaluationFixtures plans each engine's own early-evaluation
// fixtures, under every engine of the matrix that evaluates variables
// early, with plain engine and with the runner (SavePlan, the same values
// in Args.Vars or Args.VarFiles), each on a copy of its own, and requires,
// per fixture, the same plan document (terraform show -json, as the sweep
// compares it), or the same errors, or a refusal naming the component's
// own state; a plan both made is then applied by both (ApplyPlan against
// plain apply of its saved plan), alike. Fixtures whose init needs a
// download (the engine's own test provider, a registry module) are counted
// and left out; the test fails when it compares none. Terraform's run
// under 1.15.0 too, the release that introduced them.
func TestEarlyEvaluationFixtures(t *testing.T) {
	testenv.Engines(t, earlySweep)
	// And under the release that introduced Terraform's fixtures.
	t.Run(testenv.Terraform115.Name(), func(t *testing.T) { earlySweep(t, testenv.Terraform115.Engine(t)) })
}

// earlySweep is TestEarlyEvaluationFixtures under engine e.
func earlySweep(t *testing.T, e testenv.Engine) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	info, err := engine.Detect(ctx, e.Path)
	require.NoError(t, err)
	set := earlyFixtures[e.Kind]
	if info.Version.Core().LessThan(version.Must(version.NewVersion(set.since))) {
		t.Skipf("skipping: %s predates early evaluation (%s %s)", info, e.Kind.Product(), set.since)
	}
	modDir, err := testenv.ModuleDir(ctx, engineModules[e.Kind], info.Version.String())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s's source is required under CI=true: %v", info, err)
		}
		t.Skipf("skipping: %s's source is not available from the Go module proxy (%v)", info, err)
	}
	var fixtures []fixture
	for _, g := range set.dirs {
		dirs, err := filepath.Glob(filepath.Join(modDir, filepath.FromSlash(g)))
		require.NoError(t, err)
		for _, d := range dirs {
			rel, _ := filepath.Rel(modDir, d)
			fixtures = append(fixtures, fixture{name: filepath.ToSlash(rel), dir: d})
		}
	}
	require.NotEmpty(t, fixtures, "%s has no early-evaluation fixtures under %v", info, set.dirs)

	root := t.TempDir()
	cli := filepath.Join(root, "offline.tfrc")
	mirror := filepath.Join(root, "empty-mirror")
	require.NoError(t, os.Mkdir(mirror, 0o755))
	require.NoError(t, os.WriteFile(cli, []byte(fmt.Sprintf(
		"disable_checkpoint = true\nprovider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)), 0o644))
	env := testenv.TerraformEnv(cli)

	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	require.NoError(t, err)
	r, err := runner.New(runner.WithWorkdirs(wds), runner.WithTerraform(e.Path), runner.WithParallelism(workers),
		runner.WithLockTimeout(0), runner.WithRetry(runner.RetryPolicy{}))
	require.NoError(t, err)

	var compared, applied, downloads int
	for i, f := range fixtures {
		args := varArgs(t, f.dir, set.vars)
		plainDir := filepath.Join(root, "plain", fmt.Sprint(i), filepath.Base(f.dir))
		// Without the fixture's own .terraform, which an instance never
		// reads (a fixture that plans only with the modules installed
		// there needs a download).
		p := runPlainVars(ctx, e.Path, env, f.dir, plainDir, args, ".terraform")
		if p.download {
			downloads++
			continue
		}
		src := filepath.Join(root, "src", fmt.Sprint(i), filepath.Base(f.dir))
		require.NoError(t, copyTree(f.dir, src))
		u := runner.Unit{
			Workdir: workdir.Spec{Stack: e.Name + "-early", Instance: filepath.Base(f.dir), Source: src},
			Env:     map[string]string{"TF_CLI_CONFIG_FILE": cli, "CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1"},
		}
		u.Args.Vars, u.Args.VarFiles = unitVars(args)
		u.ID = u.Workdir.Stack + "/" + u.Workdir.Instance
		compared++
		t.Run(f.name, func(t *testing.T) {
			rep, _ := r.Run(ctx, runner.SavePlan, u)
			require.NotNil(t, rep)
			res := rep.Results[0]
			var sse *workdir.SourceStateError
			switch {
			case errors.As(res.Err, &sse):
				checkRefusal(t, src, sse, res.Err)
				t.Logf("refused (%v)", res.Err)
				return
			case res.Status != runner.Succeeded:
				require.NotEmpty(t, p.failed, "the runner failed where plain %s planned: %v", e.Kind, res.Err)
				want := errorSummaries(p.failed)
				require.NotEmpty(t, want, "plain %s failed without an error diagnostic:\n%s", e.Kind, cut(p.failed))
				for _, w := range want {
					require.Contains(t, oneLine(fmt.Sprint(res.Err)), oneLine(w), "the runner failed with other errors than plain %s's:\n%s", e.Kind, cut(p.failed))
				}
				t.Logf("failed alike: %s", strings.Join(want, "; "))
				return
			}
			require.Empty(t, p.failed, "plain %s failed where the runner planned", e.Kind)
			doc, err := os.ReadFile(res.Plan.JSONFile)
			require.NoError(t, err)
			require.Equal(t, normalize(t, p.doc, p.dir), normalize(t, doc, runnerDir(t, wds, u, e.Kind)), "the runner's plan and plain %s's", e.Kind)

			rep, err = r.Run(ctx, runner.ApplyPlan, u)
			require.NoError(t, err)
			require.Equal(t, runner.Succeeded, rep.Results[0].Status, "%v", rep.Results[0].Err)
			out, err := terraform(ctx, e.Path, env, plainDir, "apply", "-input=false", "-no-color", "plain.tfplan")
			require.NoError(t, err, "plain %s apply:\n%s", e.Kind, out)
			applied++
		})
	}
	t.Logf("%s's early-evaluation fixtures: %d, %d need a download (left out), %d compared, %d planned and applied alike",
		info, len(fixtures), downloads, compared, applied)
	require.Positive(t, compared, "no fixture compared")
}

// varArgs are the -var and -var-file arguments the engine's own tests give
// the fixture at dir: a test.tfvars beside it, else a value for each
// variable of values its root module (*.tf) declares.
func varArgs(t *testing.T, dir string, values map[string]string) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "test.tfvars")); err == nil {
		return []string{"-var-file=test.tfvars"}
	}
	var b []byte
	files, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	for _, f := range files {
		fb, _ := os.ReadFile(f)
		b = append(b, fb...)
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(values)) {
		if strings.Contains(string(b), `variable "`+n+`"`) {
			out = append(out, "-var", n+"="+values[n])
		}
	}
	return out
}

// unitVars turns varArgs into Args.Vars and Args.VarFiles.
func unitVars(args []string) (map[string]string, []string) {
	vars := map[string]string{}
	var files []string
	for i := 0; i < len(args); i++ {
		if f, ok := strings.CutPrefix(args[i], "-var-file="); ok {
			files = append(files, f)
			continue
		}
		if args[i] == "-var" && i+1 < len(args) {
			k, v, _ := strings.Cut(args[i+1], "=")
			vars[k] = v
			i++
		}
	}
	return vars, files
}
