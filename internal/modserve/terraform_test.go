package modserve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// hostBlock is the CLI config host block that sends plain terraform's (or
// tofu's) module registry requests for host to the server at serverURL,
// the "modules.v1" the runner's CLI config for a unit gives the host
// (runner's serverCLIConfig, in terraform's JSON form).
func hostBlock(serverURL, host string) string {
	return fmt.Sprintf("host %q {\n  services = {\n    \"modules.v1\" = %q\n  }\n}\n", host, serverURL+"/modules.v1/"+host+"/")
}

// TestPlainEngineInstallsFromServer: plain terraform and plain tofu,
// pointed at the module server only by a CLI config host block for the
// registry's host (hostBlock: modules.v1 on the server) and the server's
// token as TF_TOKEN_<host>, install a registry module from it (versions,
// the download answer, the tree archive with its checksum), and, with
// git's insteadOf for the git server's host (GitConfig), a git module at
// a tag, in two root modules of their own: the upstream archive is
// downloaded once, the git repository cloned from upstream once. Under
// every engine of the matrix.
func TestPlainEngineInstallsFromServer(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newWorld(t)
		g := newGitUpstream(t)
		c := w.client(t)
		gitEnv := c.GitConfig([]string{g.Host()}, w.token, 0)
		cfg := filepath.Join(t.TempDir(), "cli.tfrc")
		require.NoError(t, os.WriteFile(cfg, []byte(hostBlock(w.srv.URL, w.reg.Host())), 0o644))
		cert := writeCert(t, w.srv)
		for _, root := range []string{"a", "b"} {
			dir := filepath.Join(t.TempDir(), root)
			testenv.WriteTree(t, dir, map[string]string{"main.tf": `module "greet" {
  source  = "` + w.mod.Source() + `"
  version = "~> 1.0"
}
output "version" { value = module.greet.version }
module "hello" { source = "` + g.Source("hello", "v1.0.0") + `" }
`})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, e.Path, "get", "-no-color")
			cmd.Dir = dir
			cmd.Env = append(testenv.TerraformEnv(cfg), "SSL_CERT_FILE="+cert,
				"TF_TOKEN_"+strings.ReplaceAll(w.reg.Host(), ".", "_")+"="+w.token)
			for k, v := range gitEnv {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			cancel()
			require.NoError(t, err, out.String())
			b, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "greet", "main.tf"))
			require.NoError(t, err, out.String())
			require.Contains(t, string(b), `"1.0.0"`)
			require.FileExists(t, filepath.Join(dir, ".terraform", "modules", "greet", "modules", "x", "x.tf"))
			b, err = os.ReadFile(filepath.Join(dir, ".terraform", "modules", "hello", "main.tf"))
			require.NoError(t, err, out.String())
			require.Contains(t, string(b), `"hello 1.0.0"`)
		}
		require.Equal(t, 1, w.downloads(), "one upstream download for both roots")
		require.Equal(t, 1, g.Fetches("hello"), "one upstream clone for both roots")
	})
}

// TestPlainEngineChecksTheArchive: terraform and tofu check the archive
// against the checksum the download answer gives: the same server with
// that checksum changed on the way makes get fail, installing nothing.
func TestPlainEngineChecksTheArchive(t *testing.T) {
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		w := newWorldWith(t, func(real http.Handler) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				real.ServeHTTP(rec, r)
				for k, v := range rec.Header() {
					rw.Header()[k] = v
				}
				if loc := rec.Header().Get("X-Terraform-Get"); loc != "" {
					rw.Header().Set("X-Terraform-Get", regexp.MustCompile(`sha256:[0-9a-f]{64}`).ReplaceAllString(loc, "sha256:"+strings.Repeat("0", 64)))
				}
				rw.WriteHeader(rec.Code)
				_, _ = rw.Write(rec.Body.Bytes())
			})
		})
		cfg := filepath.Join(t.TempDir(), "cli.tfrc")
		require.NoError(t, os.WriteFile(cfg, []byte(hostBlock(w.srv.URL, w.reg.Host())), 0o644))
		dir := t.TempDir()
		testenv.WriteTree(t, dir, map[string]string{"main.tf": `module "greet" {
  source  = "` + w.mod.Source() + `"
  version = "1.0.0"
}
`})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, e.Path, "get", "-no-color")
		cmd.Dir = dir
		cmd.Env = append(testenv.TerraformEnv(cfg), "SSL_CERT_FILE="+writeCert(t, w.srv),
			"TF_TOKEN_"+strings.ReplaceAll(w.reg.Host(), ".", "_")+"="+w.token)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, string(out))
		require.Contains(t, strings.ToLower(string(out)), "checksum")
		require.NoFileExists(t, filepath.Join(dir, ".terraform", "modules", "greet", "main.tf"))
	})
}
