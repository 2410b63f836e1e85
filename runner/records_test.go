package runner

// What the SDK's records hold and how they are kept: no value of a
// sensitive (or non-const) variable, nor a module source evaluated from
// one, reaches a record, a log, an event or the report; every record the
// SDK writes under a workdir root or a log dir is 0600 in a 0700 dir.

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// tokenComponent calls a module whose source carries a credential built
// from a sensitive variable that is not const: plain terraform refuses it
// at init ("Only literal values and const variables can be evaluated
// during init"; Terraform 1.11: "Variables not allowed"), OpenTofu too
// ("Sensitive value not allowed").
const tokenComponent = `
variable "token" {
  type      = string
  sensitive = true
}
module "m" {
  source = "git::https://x:${var.token}@example.invalid/r.git"
}
`

// TestSensitiveSourceNeverRecorded gives a sensitive variable that
// builds a module source by each way a unit gives variables (Args.Vars,
// TF_VAR_token, a var file), runs DryRun, Init and Plan, and checks:
// the runner refuses as the plain engine does on a copy of the same
// component; the token is in no file under the workers' dirs (the
// workdir root with every stamp and record, the log dir, the plugin
// cache and module store), nor in the report's JSON, an event, a
// Result's error, the output stream or the host's log; and every record
// the SDK keeps is 0600 in a 0700 dir, records an older release left
// wider (0644 in 0755 dirs) included, once the instance runs again.
func TestSensitiveSourceNeverRecorded(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newEngineWorld(t, e)
		src := filepath.Join(w.dir, "components", "tok")
		writeTree(t, src, map[string]string{"main.tf": tokenComponent})
		logDir := filepath.Join(w.dir, "logs")
		var out, host syncBuffer
		r := w.runner(t, WithOutput(&out), WithLogger(slog.New(slog.NewTextHandler(&host, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		varFiles := t.TempDir() // outside everything grepped: it holds the token
		var mu sync.Mutex
		var seen []string // reports, events, errors
		keep := func(v any) {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			mu.Lock()
			seen = append(seen, string(b))
			mu.Unlock()
		}
		var tokens []string
		for _, way := range []string{"vars", "env", "varfile"} {
			token := "tok3n-" + way + "-7Hq2xZ"
			tokens = append(tokens, token)
			u := Unit{Workdir: workdirSpec("plat-ue2-dev", "tok-"+way, src, files(t, map[string]any{}, w.statePath("tok-"+way)))}
			plainArgs := []string{"init", "-input=false", "-no-color", "-backend=false"}
			plainEnv := testenv.TerraformEnv(filepath.Join(w.dir, "none.tfrc"))
			switch way {
			case "vars":
				u.Args.Vars = map[string]string{"token": token}
				plainArgs = append(plainArgs, "-var", "token="+token)
			case "env":
				t.Setenv("TF_VAR_token", token)
				plainEnv = append(plainEnv, "TF_VAR_token="+token)
			case "varfile":
				vf := filepath.Join(varFiles, "token.tfvars")
				require.NoError(t, os.WriteFile(vf, []byte(`token = "`+token+`"`), 0o600))
				u.Args.VarFiles = []string{vf}
				plainArgs = append(plainArgs, "-var-file="+vf)
			}
			// The plain engine refuses it.
			plain := copyOf(t, src)
			plainOut, err := runEngine(testCtx(t), e.Path, plain, append(plainEnv, "TF_DATA_DIR="+filepath.Join(plain, ".plain-data")), plainArgs...)
			require.Error(t, err, "plain %s refuses a module source built from a sensitive variable:\n%s", e.Name, plainOut)
			require.NotContains(t, plainOut, token)

			steps, err := r.DryRun(testCtx(t), Plan, []Unit{u}, WithLogDir(logDir))
			if err == nil {
				keep(steps)
			}
			for _, c := range []Command{Init, Plan} {
				rep, err := r.RunWith(testCtx(t), c, []Unit{u}, WithLogDir(logDir), WithEvents(func(ev Event) { keep(ev) }))
				require.Error(t, err, "%s: the runner refuses it as the plain engine does", c)
				require.Equal(t, Failed, rep.Results[0].Status)
				keep(rep)
				seen = append(seen, err.Error(), rep.Results[0].Err.Error())
			}
			if way == "env" {
				require.NoError(t, os.Unsetenv("TF_VAR_token"))
			}
		}

		grepped := 0
		require.NoError(t, filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			grepped++
			for _, tok := range tokens {
				require.False(t, bytes.Contains(b, []byte(tok)), "%s holds the token:\n%s", p, b)
			}
			return nil
		}))
		require.NotZero(t, grepped)
		require.NotEmpty(t, host.String())
		for _, s := range append(seen, out.String(), host.String()) {
			for _, tok := range tokens {
				if strings.Contains(s, tok) {
					t.Fatalf("the token is in a report, an event, an error, the output or the host's log:\n%s", s)
				}
			}
		}

		requirePrivateRecords(t, w.root, logDir)
		// Records an older release wrote wider are narrowed once the
		// instance runs again.
		widen(t, w.root, logDir)
		u := Unit{Workdir: workdirSpec("plat-ue2-dev", "tok-vars", src, files(t, map[string]any{}, w.statePath("tok-vars"))),
			Args: Args{Vars: map[string]string{"token": tokens[0]}}}
		_, err := r.RunWith(testCtx(t), Init, []Unit{u}, WithLogDir(logDir))
		require.Error(t, err)
		home, err := w.wd.Home("plat-ue2-dev", "tok-vars")
		require.NoError(t, err)
		requirePrivateRecords(t, home, "")
	})
}

// sdkRecord reports whether rel, a slash path under a workdir root, is
// a record the SDK keeps there (not a copied source file, not one
// terraform writes into the data dir).
func sdkRecord(rel string) bool {
	parts := strings.Split(rel, "/")
	switch {
	case len(parts) >= 1 && (parts[0] == ".adopted.json" || parts[0] == ".locks"):
		return true
	case len(parts) == 3 && parts[1] == ".tfisolate" && strings.HasSuffix(parts[2], ".json"):
		return true // stamp.json, state.json
	case len(parts) >= 4 && parts[1] == ".tfisolate" && parts[2] == "data":
		return strings.HasPrefix(parts[3], "tfisolate-")
	}
	return false
}

// requirePrivateRecords checks that every record under root (a workdir
// root, or one instance's home) and every file under logDir is 0600, and
// that every dir holding one is 0700, as are the instance homes, their
// .tfisolate dirs and their data dirs.
func requirePrivateRecords(t *testing.T, root, logDir string) {
	t.Helper()
	records := 0
	check := func(top string, isRecord func(rel string) bool) {
		require.NoError(t, filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(top, p)
			rel = filepath.ToSlash(rel)
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			switch {
			case fi.Mode().IsRegular() && isRecord(rel):
				records++
				require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "record %s", p)
				dir, err := os.Stat(filepath.Dir(p))
				require.NoError(t, err)
				require.Equal(t, fs.FileMode(0o700), dir.Mode().Perm(), "the dir of record %s", p)
			case fi.IsDir() && (rel == "." || isRecord(rel)):
				require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm(), "dir %s", p)
			}
			return nil
		}))
	}
	if _, err := os.Stat(filepath.Join(root, ".tfisolate")); err == nil {
		check(root, func(rel string) bool { return rel == ".tfisolate" || sdkRecord("x/"+rel) })
	} else {
		check(root, func(rel string) bool {
			parts := strings.Split(rel, "/")
			return sdkRecord(rel) || len(parts) == 2 && (parts[1] == ".tfisolate") || len(parts) == 3 && parts[2] == "data"
		})
	}
	if logDir != "" {
		check(logDir, func(string) bool { return true })
	}
	require.NotZero(t, records)
}

// widen makes every record under root and logDir 0644 and every dir
// 0755, as an older release left them.
func widen(t *testing.T, roots ...string) {
	t.Helper()
	for _, root := range roots {
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
				return os.Chmod(p, 0o755)
			case d.Type().IsRegular():
				return os.Chmod(p, 0o644)
			}
			return nil
		}))
	}
}
