package conformance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// engineModules are the engines' Go modules: each one's source, fixtures
// included, is read from the module cache at test time, at the version of
// the binary under test, and never copied into this repository.
var engineModules = map[engine.Kind]string{
	engine.Terraform: "github.com/hashicorp/terraform",
	engine.OpenTofu:  "github.com/opentofu/opentofu",
}

// fixtureRoots are the dirs of an engine's module whose fixtures are
// swept (OpenTofu keeps Terraform's layout): the CLI's own command fixtures and its end-to-end fixtures, and
// the module installer's and config loader's (module trees: local calls,
// nested and relative sources).
var fixtureRoots = []string{
	"internal/command/testdata",
	"internal/command/e2etest/testdata",
	"internal/initwd/testdata",
	"internal/configs/configload/testdata",
}

// minCompared is the least number of fixtures the sweep must compare
// (planned by both, or failed by both): with Terraform 1.11.4, 117 of 310
// candidates need no download; 98 of them are compared and 19 refused for
// their own state. A sweep that compares fewer has lost its fixtures (a
// moved dir, an init that fails for every one) and proves nothing.
const minCompared = 80

// workers is how many fixtures run at once, plain terraform and the
// runner alike: the machines this runs on have two cores.
const workers = 3

// commandTimeout bounds each plain terraform command: a fixture whose
// backend dials an address that never answers fails, it never hangs.
const commandTimeout = 2 * time.Minute

// fixture is one candidate root module of Terraform's fixtures.
type fixture struct {
	name string // its dir relative to the module, "internal/command/testdata/apply"
	dir  string // its dir in the module cache (read-only)
}

// plainRun is what plain terraform did with a copy of a fixture.
type plainRun struct {
	dir string // the copy it ran in
	// download is set when init failed because it needed to download a
	// provider or a module: such a fixture is not offline and is left out.
	download bool
	failed   string // the output of the command that failed, "" when it planned
	doc      []byte // terraform show -json of its saved plan
}

// TestTerraformFixturesPlanLikePlainTerraform plans every offline root
// module of Terraform's own fixtures (the version of the terraform binary
// the tests run, its source from the Go module proxy) with plain
// terraform and with the runner (SavePlan), each on its own copy, and
// requires for each one: both plan the same document (terraform show
// -json of the saved plan, the timestamp and the two directories aside),
// or both fail with the same errors, or the runner refuses the
// fixture because the component holds its own state, naming that file
// (issue 20's last "done when" clause); and the runner never wrote into
// any component. Fixtures whose init needs a
// download (a provider, a registry module) are counted and left out.
func TestTerraformFixturesPlanLikePlainTerraform(t *testing.T) {
	testenv.Engines(t, sweep)
}

// sweep is the sweep under engine e, with e's own fixtures at e's version.
func sweep(t *testing.T, e testenv.Engine) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()

	tf := e.Path
	info, err := engine.Detect(ctx, tf)
	require.NoError(t, err)
	require.Equal(t, e.Kind, info.Kind, "the sweep compares the runner with the plain engine: %s", info)
	version := info.Version.String()
	modDir, err := testenv.ModuleDir(ctx, engineModules[e.Kind], version)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s's source is required under CI=true: %v", info, err)
		}
		t.Skipf("skipping: %s's source is not available from the Go module proxy (%v)", info, err)
	}

	fixtures := findFixtures(t, modDir)

	root := t.TempDir()
	cli := filepath.Join(root, "offline.tfrc")
	mirror := filepath.Join(root, "empty-mirror")
	require.NoError(t, os.Mkdir(mirror, 0o755))
	// The only installation method is an empty mirror: a fixture that
	// needs any provider but the builtin one fails init at once, offline.
	require.NoError(t, os.WriteFile(cli, []byte(fmt.Sprintf(
		"disable_checkpoint = true\nprovider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror)), 0o644))

	// Plain terraform, each fixture in a copy of its own.
	plain := make([]plainRun, len(fixtures))
	env := testenv.TerraformEnv(cli)
	pool(len(fixtures), func(i int) {
		dir := filepath.Join(root, "plain", fmt.Sprint(i), filepath.Base(fixtures[i].dir))
		plain[i] = runPlain(ctx, tf, env, fixtures[i].dir, dir)
	})
	require.NoError(t, ctx.Err(), "the sweep ran out of time in plain terraform")

	// The runner: one Run of every offline fixture, each a unit whose
	// source is a copy of its own.
	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	require.NoError(t, err)
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithTerraform(tf),
		runner.WithParallelism(workers),
		// As plain terraform: a held state lock fails at once, and no
		// failure is tried again.
		runner.WithLockTimeout(0),
		runner.WithRetry(runner.RetryPolicy{}),
	)
	require.NoError(t, err)
	var units []runner.Unit
	fixtureOf := map[string]int{} // unit ID -> index in fixtures and plain
	for i, f := range fixtures {
		if plain[i].download {
			continue
		}
		src := filepath.Join(root, "src", fmt.Sprint(i), filepath.Base(f.dir))
		require.NoError(t, copyTree(f.dir, src))
		u := runner.Unit{
			Workdir: workdir.Spec{Stack: e.Name + "-fixtures", Instance: strings.TrimPrefix(f.name, "internal/"), Source: src},
			Env: map[string]string{
				"TF_CLI_CONFIG_FILE": cli,
				"CHECKPOINT_DISABLE": "1",
				"TF_IN_AUTOMATION":   "1",
			},
		}
		u.ID = u.Workdir.Stack + "/" + u.Workdir.Instance
		fixtureOf[u.ID] = i
		units = append(units, u)
	}
	rep, err := r.Run(ctx, runner.SavePlan, units...)
	require.NotNil(t, rep, "%v", err)
	require.NoError(t, ctx.Err(), "the sweep ran out of time in the runner")

	var compared, planned, dataDirOnly, refused, bothFailed, downloads int
	for i := range plain {
		if plain[i].download {
			downloads++
		}
	}
	require.Len(t, rep.Results, len(units), "a result for every unit")
	for j, res := range rep.Results {
		u := units[j]
		require.Equal(t, u.ID, res.Unit, "results in the order of the units")
		i := fixtureOf[u.ID]
		f, p := fixtures[i], plain[i]
		// Whatever the runner did with it, the component was only read.
		require.Equal(t, treeOf(t, f.dir), treeOf(t, u.Workdir.Source), "the runner wrote into the component %s", u.Workdir.Source)
		var sse *workdir.SourceStateError
		switch {
		case errors.As(res.Err, &sse):
			refused++
			t.Run(f.name, func(t *testing.T) {
				checkRefusal(t, u.Workdir.Source, sse, res.Err)
				plainDid := "planned"
				if p.failed != "" {
					plainDid = "failed: " + firstError(p.failed)
				}
				t.Logf("refused (%v); plain terraform %s", res.Err, plainDid)
			})
		case res.Status == runner.Succeeded:
			compared++
			planned++
			t.Run(f.name, func(t *testing.T) {
				require.NotNil(t, res.Plan, "the runner saved no plan")
				doc, err := os.ReadFile(res.Plan.JSONFile)
				require.NoError(t, err)
				got := normalize(t, doc, runnerDir(t, wds, u, e.Kind))
				want := p
				if p.failed != "" {
					// Plain terraform failed where the runner planned. The
					// one difference allowed: the component's own data dir
					// (.terraform: the backend and workspace plain terraform
					// last used there), which an instance never reads, as
					// long as the local state it points at records nothing
					// (else that is the component's state, ignored). Plain
					// terraform without it must plan what the runner did.
					_, err := os.Stat(filepath.Join(f.dir, ".terraform"))
					require.NoError(t, err, "plain terraform failed where the runner planned:\n%s", cut(p.failed))
					for _, st := range recordedStates(t, f.dir) {
						require.False(t, recordsSomething(t, st), "the runner planned, ignoring %s, the local state the component's .terraform names, which records resources or outputs; plain terraform:\n%s", st, cut(p.failed))
					}
					fresh := filepath.Join(root, "fresh", fmt.Sprint(i), filepath.Base(f.dir))
					want = runPlain(ctx, tf, env, f.dir, fresh, ".terraform")
					require.Empty(t, want.failed, "plain terraform failed where the runner planned, also without the component's .terraform:\n%s\nwith it:\n%s", cut(want.failed), cut(p.failed))
					dataDirOnly++
				}
				if w := normalize(t, want.doc, want.dir); w != got {
					t.Fatalf("the runner planned otherwise than plain terraform; first difference:\n%s\nplain terraform's plan:\n%s\nthe runner's plan:\n%s",
						firstDiff(w, got), cut(w), cut(got))
				}
				t.Logf("planned alike: %d resource changes", len(res.Plan.Changes))
			})
		case p.failed != "" && hasDataDir(f.dir) && downloadRe.MatchString(fmt.Sprint(res.Err)):
			// Plain terraform got as far as it did on the modules the
			// component's own .terraform holds, which an instance never
			// reads: without them the fixture needs a download.
			downloads++
		default:
			bothFailed++
			compared++
			t.Run(f.name, func(t *testing.T) {
				require.NotEmpty(t, p.failed, "the runner failed where plain terraform planned: %v\nthe unit's log: %s", res.Err, res.Log)
				if crashRe.MatchString(p.failed) {
					// The engine itself crashed (a bug of that release,
					// e.g. Terraform 1.16.0 on an empty module name): the
					// runner must have failed with that crash too.
					require.Regexp(t, crashRe, fmt.Sprint(res.Err), "plain %s crashed; the runner did not say so:\n%s", e.Kind, cut(p.failed))
					t.Logf("crashed alike")
					return
				}
				want := errorSummaries(p.failed)
				require.NotEmpty(t, want, "plain terraform failed without an error diagnostic:\n%s", cut(p.failed))
				got := oneLine(fmt.Sprint(res.Err))
				for _, w := range want {
					require.Contains(t, got, oneLine(w), "the runner failed with other errors than plain terraform's:\n%s", cut(p.failed))
				}
				t.Logf("failed alike: %s", strings.Join(want, "; "))
			})
		}
	}
	t.Logf("%s's fixtures: %d candidates, %d need a download (left out), %d compared (%d planned alike, %d of them once the component's own .terraform was set aside; %d failed alike), %d refused for the component's own state; %s",
		info, len(fixtures), downloads, compared, planned, dataDirOnly, bothFailed, refused, time.Since(start).Round(time.Second))
	require.GreaterOrEqual(t, compared, minCompared, "the sweep compared too few fixtures to prove anything")
}

// findFixtures lists the candidate root modules under fixtureRoots: each
// dir that holds a .tf or .tf.json file and lies under no other such dir
// (those are its child modules), in name order.
func findFixtures(t *testing.T, modDir string) []fixture {
	t.Helper()
	var out []fixture
	for _, fr := range fixtureRoots {
		base := filepath.Join(modDir, filepath.FromSlash(fr))
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if p != base && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .terraform and the like: part of a fixture, never one
			}
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") || strings.HasSuffix(n, ".tofu") || strings.HasSuffix(n, ".tofu.json")) {
					rel, err := filepath.Rel(modDir, p)
					if err != nil {
						return err
					}
					out = append(out, fixture{name: filepath.ToSlash(rel), dir: p})
					return filepath.SkipDir
				}
			}
			return nil
		})
		require.NoError(t, err, "list Terraform's fixtures under %s", base)
	}
	slices.SortFunc(out, func(a, b fixture) int { return strings.Compare(a.name, b.name) })
	return out
}

// pool calls fn(0) ... fn(n-1), at most workers at once, and returns when
// every call has.
func pool(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// downloadRe matches what init says when it needs to download something
// the offline CLI config cannot give it.
var downloadRe = regexp.MustCompile(`Failed to query available provider packages|Failed to install provider|Failed to download module|Failed to retrieve available versions for module|Module not found`)

// crashRe matches what an engine prints when it panics.
var crashRe = regexp.MustCompile(`(?i)(TERRAFORM|OPENTOFU) CRASH|panic: `)

// hasDataDir reports whether the fixture at dir ships a .terraform of its
// own.
func hasDataDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".terraform"))
	return err == nil
}

// runPlain copies the fixture at src to dir, leaving out the entries of
// the fixture's own dir named by skip, and runs plain terraform there as
// a user would: init, plan -out, show -json of that plan.
func runPlain(ctx context.Context, tf string, env []string, src, dir string, skip ...string) plainRun {
	return runPlainVars(ctx, tf, env, src, dir, nil, skip...)
}

// runPlainVars is runPlain with variables (-var, -var-file arguments)
// given to init, plan and show, as early evaluation needs them.
func runPlainVars(ctx context.Context, tf string, env []string, src, dir string, vars []string, skip ...string) plainRun {
	p := plainRun{dir: dir}
	if err := copyTree(src, dir, skip...); err != nil {
		p.failed = "copy the fixture: " + err.Error()
		return p
	}
	if out, err := terraform(ctx, tf, env, dir, append([]string{"init", "-input=false", "-no-color"}, vars...)...); err != nil {
		p.download = downloadRe.MatchString(out)
		p.failed = out
		return p
	}
	if out, err := terraform(ctx, tf, env, dir, append([]string{"plan", "-input=false", "-no-color", "-out=plain.tfplan"}, vars...)...); err != nil {
		p.failed = out
		return p
	}
	doc, err := terraform(ctx, tf, env, dir, append(append([]string{"show", "-json", "-no-color"}, vars...), "plain.tfplan")...)
	if err != nil {
		p.failed = doc
		return p
	}
	p.doc = []byte(doc)
	return p
}

// terraform runs one terraform command in dir and returns what it said
// (stdout, then stderr).
func terraform(ctx context.Context, tf string, env []string, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tf, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return stdout.String() + stderr.String(), err
}

// copyTree copies the tree at src (the module cache's, read-only) to
// dst, making the copy writable as a user's checkout is, then removes
// the entries of dst itself named by skip.
func copyTree(src, dst string, skip ...string) error {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	for _, n := range skip {
		if err := os.RemoveAll(filepath.Join(dst, n)); err != nil {
			return err
		}
	}
	return nil
}

// treeOf maps each file under dir to its content, and each dir to "/".
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || d.IsDir() {
			out[rel] = "/"
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	require.NoError(t, err)
	return out
}

// runnerDir is where the runner ran terraform for u: its workdir's Dir,
// prepared again with the same spec (the instance lock is released at
// once).
func runnerDir(t *testing.T, wds *workdir.Manager, u runner.Unit, k engine.Kind) string {
	t.Helper()
	s := u.Workdir
	s.Engine = workdir.Terraform
	if k == engine.OpenTofu {
		s.Engine = workdir.OpenTofu
	}
	wd, err := wds.Prepare(t.Context(), s)
	require.NoError(t, err)
	require.NoError(t, wd.Close())
	return wd.Dir
}

// recordedStates are the local state files of the component at dir that
// its own data dir (.terraform/terraform.tfstate, where plain terraform
// records the backend it last initialized, and a legacy remote state
// config) names, those that exist.
func recordedStates(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", "terraform.tfstate"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	type conf struct {
		Type   string `json:"type"`
		Config struct {
			Path         string `json:"path"`
			WorkspaceDir string `json:"workspace_dir"`
		} `json:"config"`
	}
	var rec struct{ Backend, Remote *conf }
	require.NoError(t, json.Unmarshal(b, &rec), "%s", b)
	var out []string
	for _, c := range []*conf{rec.Backend, rec.Remote} {
		if c == nil || c.Type != "local" {
			continue
		}
		path, wsDir := cmp.Or(c.Config.Path, "terraform.tfstate"), cmp.Or(c.Config.WorkspaceDir, "terraform.tfstate.d")
		ws, _ := filepath.Glob(filepath.Join(dir, wsDir, "*", "terraform.tfstate"))
		for _, p := range append([]string{filepath.Join(dir, path)}, ws...) {
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// recordsSomething reports whether the state file at p records resources
// or outputs, in the current format (version 4) or the one before it.
func recordsSomething(t *testing.T, p string) bool {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var st struct {
		Resources []any          `json:"resources"`
		Outputs   map[string]any `json:"outputs"`
		Modules   []struct {
			Resources map[string]any `json:"resources"`
			Outputs   map[string]any `json:"outputs"`
		} `json:"modules"`
	}
	require.NoError(t, json.Unmarshal(b, &st), "state %s", p)
	n := len(st.Resources) + len(st.Outputs)
	for _, m := range st.Modules {
		n += len(m.Resources) + len(m.Outputs)
	}
	return n > 0
}

// normalize returns a show -json document in a comparable form: indented
// with sorted keys, without the plan's timestamp, with dir (where
// terraform ran) written "<DIR>" wherever a value holds it.
func normalize(t *testing.T, doc []byte, dir string) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(doc, &v), "%s", cut(string(doc)))
	delete(v, "timestamp")
	// Terraform lists the attributes a plan's conditions and outputs read
	// in map order: the same plan gives them in another order each run.
	if ra, ok := v["relevant_attributes"].([]any); ok {
		slices.SortFunc(ra, func(a, b any) int {
			x, _ := json.Marshal(a)
			y, _ := json.Marshal(b)
			return bytes.Compare(x, y)
		})
	}
	out, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return strings.ReplaceAll(string(out), dir, "<DIR>")
}

// checkRefusal requires a refusal for the component's own state to name
// files that are the component's: in its source dir, present there (its
// backend's state, or state left where plain terraform would stop to ask
// about migrating it).
func checkRefusal(t *testing.T, src string, sse *workdir.SourceStateError, err error) {
	t.Helper()
	files := append(slices.Clone(sse.Files), sse.Left...)
	require.NotEmpty(t, files, "a refusal for the component's state names its files: %v", err)
	for _, f := range files {
		rel, rerr := filepath.Rel(src, f.Path)
		require.NoError(t, rerr)
		require.False(t, rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)), "the refusal names %s, outside the component %s", f.Path, src)
		require.FileExists(t, f.Path)
		require.Contains(t, err.Error(), f.Path, "the error names the state file")
	}
}

// errorRe finds terraform's first error diagnostic's summary.
var errorRe = regexp.MustCompile(`(?m)^[│╷ ]*Error: (.+)$`)

// errorSummaries are the summaries of every error diagnostic terraform
// printed, in order.
func errorSummaries(out string) []string {
	var s []string
	for _, m := range errorRe.FindAllStringSubmatch(out, -1) {
		s = append(s, strings.TrimSpace(m[1]))
	}
	return s
}

// firstError is the summary of the first error diagnostic terraform
// printed, "" when it printed none.
func firstError(out string) string {
	m := errorRe.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// oneLine joins the lines of s with spaces, as a summary spread over a
// line break reads in one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// firstDiff shows the first line where a and b differ, with a line of
// context before it.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			prev := ""
			if i > 0 {
				prev = al[i-1]
			}
			return fmt.Sprintf("line %d, after %q:\n- plain:  %s\n- runner: %s", i+1, prev, x, y)
		}
	}
	return "(none)"
}

// cut keeps the start of a long text for a failure message.
func cut(s string) string {
	const n = 6000
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n... (cut)"
}
