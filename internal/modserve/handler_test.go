package modserve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// world is an upstream registry (the loopback testregistry, counting
// archive downloads) publishing tfisolate/greet/tfitest 1.0.0, and a
// module server on real loopback HTTPS in front of it, with its own
// store and a token.
type world struct {
	reg   *testregistry.Server
	srv   *httptest.Server
	token string
	mod   Module
}

const testToken = "s3cret-fleet-token"

func newWorld(t *testing.T, opts ...Option) *world {
	t.Helper()
	return newWorldWith(t, nil, opts...)
}

// newWorldWith is newWorld with the server's handler wrapped by wrap
// (nil: as it is).
func newWorldWith(t *testing.T, wrap func(http.Handler) http.Handler, opts ...Option) *world {
	t.Helper()
	w := &world{reg: testregistry.Start(t), token: testToken}
	require.NoError(t, w.reg.AddModule("tfisolate", "greet", "tfitest", "1.0.0", map[string]string{
		"main.tf":        `output "version" { value = "1.0.0" }` + "\n",
		"modules/x/x.tf": "# nested\n",
		"scripts/run.sh": "#!/bin/sh\n",
		"README.md":      "greet\n",
	}))
	w.mod = Module{Host: w.reg.Host(), Namespace: "tfisolate", Name: "greet", System: "tfitest", Version: "1.0.0"}
	store, err := modstore.Open(filepath.Join(t.TempDir(), "server-store"))
	require.NoError(t, err)
	h, err := Handler(store, append([]Option{WithHTTPClient(w.reg.HTTPClient()), WithToken(w.token)}, opts...)...)
	require.NoError(t, err)
	if wrap != nil {
		h = wrap(h)
	}
	w.srv = httptest.NewTLSServer(h)
	t.Cleanup(w.srv.Close)
	return w
}

// downloads is how many times the upstream archive was fetched.
func (w *world) downloads() int {
	return w.reg.ModuleDownloads(testregistry.ModuleKey("tfisolate", "greet", "tfitest", "1.0.0"))
}

func (w *world) client(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient(w.srv.URL)
	require.NoError(t, err)
	return c
}

// getLikeTerraform fetches m's tree into dir (existing, empty) as
// terraform does through the server: the download answer (with the
// token), then the archive at the location it gives (without the token),
// checked against the location's checksum before it is unpacked. It
// returns the download answer's status.
func (w *world) getLikeTerraform(ctx context.Context, m Module, dir string) (int, error) {
	get := func(u string, token bool) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, err
		}
		if token {
			req.Header.Set("Authorization", "Bearer "+w.token)
		}
		resp, err := w.srv.Client().Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	dl, _, err := get(w.srv.URL+"/modules.v1/"+m.path()+"/download", true)
	if err != nil {
		return 0, err
	}
	if dl.StatusCode != http.StatusNoContent {
		return dl.StatusCode, fmt.Errorf("download answer: %s", dl.Status)
	}
	u, err := dl.Request.URL.Parse(dl.Header.Get("X-Terraform-Get"))
	if err != nil {
		return dl.StatusCode, err
	}
	want, ok := strings.CutPrefix(u.Query().Get("checksum"), "sha256:")
	if !ok {
		return dl.StatusCode, fmt.Errorf("the location %s has no sha256 checksum", u)
	}
	resp, body, err := get(u.String(), false)
	if err != nil {
		return dl.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return dl.StatusCode, fmt.Errorf("archive: %s", resp.Status)
	}
	if got := sha256.Sum256(body); hex.EncodeToString(got[:]) != want {
		return dl.StatusCode, fmt.Errorf("archive: checksum %x, the download answer named %s", got, want)
	}
	return dl.StatusCode, unpack(bytes.NewReader(body), "tar.gz", dir, DefaultMaxSize)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestFleetFetchesOnce: eight machines ask the server for one module at
// once, from a cold start, as terraform does (download answer, then the
// archive, checked against its checksum): the upstream archive is
// downloaded once, and every machine unpacks the upstream's tree.
func TestFleetFetchesOnce(t *testing.T) {
	w := newWorld(t)
	var (
		wg       sync.WaitGroup
		dirs     = make([]string, 8)
		statuses = make([]int, 8)
		errs     = make([]error, 8)
	)
	for i := range dirs {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			statuses[i], errs[i] = w.getLikeTerraform(ctxT(t), w.mod, dirs[i])
		})
	}
	wg.Wait()
	for i := range dirs {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusNoContent, statuses[i])
		b, err := os.ReadFile(filepath.Join(dirs[i], "main.tf"))
		require.NoError(t, err)
		require.Contains(t, string(b), `"1.0.0"`)
		require.FileExists(t, filepath.Join(dirs[i], "modules", "x", "x.tf"))
	}
	require.Equal(t, 1, w.downloads(), "one upstream download for the fleet")
}

// TestToken: without the token every route answers 401 (the tree route
// too, unless its location carries the signature a download answer put
// on it); a wrong token is refused; the token opens the tree route too.
func TestToken(t *testing.T) {
	w := newWorld(t)
	get := func(path, tok string) *http.Response {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, w.srv.URL+path, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := w.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	base := "/modules.v1/" + w.mod.Source()
	for _, p := range []string{base + "/versions", base + "/1.0.0/download", "/v1/tree/" + w.mod.path() + ".tar.gz"} {
		require.Equal(t, http.StatusUnauthorized, get(p, "").StatusCode, p)
		require.Equal(t, http.StatusUnauthorized, get(p, "wrong").StatusCode, p)
	}
	require.Equal(t, 0, w.downloads(), "nothing fetched for a request without the token")
	dl := get(base+"/1.0.0/download", w.token)
	require.Equal(t, http.StatusNoContent, dl.StatusCode)
	loc := dl.Header.Get("X-Terraform-Get")
	require.Regexp(t, `^\.\./\.\./\.\./\.\./\.\./\.\./v1/tree/`+w.mod.path()+`\.tar\.gz\?checksum=sha256:[0-9a-f]{64}&sig=[0-9a-f]{64}$`, loc)
	u, err := dl.Request.URL.Parse(loc)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, get(u.RequestURI(), "").StatusCode, "the signed location needs no token")
	other := *u
	other.Path = "/v1/tree/" + w.mod.Source() + "/2.0.0.tar.gz"
	require.Equal(t, http.StatusUnauthorized, get(other.RequestURI(), "").StatusCode, "a signature is good for its own module only")
	require.Equal(t, http.StatusOK, get("/v1/tree/"+w.mod.path()+".tar.gz", w.token).StatusCode, "the token opens the tree without a signature")
	require.Equal(t, 1, w.downloads())
}

// TestBadRequests: a malformed module path is 400, a version the
// upstream lacks 404 (its download answer and its tree alike), and
// neither reaches the store.
func TestBadRequests(t *testing.T) {
	w := newWorld(t)
	for _, p := range []string{"/modules.v1/registry.example.test/tfi..x/greet/tfitest/versions", "/v1/tree/registry.example.test/tfisolate/greet/tfitest/1.0.tar.gz"} {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, w.srv.URL+p, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+w.token)
		resp, err := w.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, p)
	}
	missing := w.mod
	missing.Version = "9.9.9"
	status, err := w.getLikeTerraform(ctxT(t), missing, t.TempDir())
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, status)
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, w.srv.URL+"/v1/tree/"+missing.path()+".tar.gz", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestNewClientRefusesURLs: only https, and nothing secret in the URL.
func TestNewClientRefusesURLs(t *testing.T) {
	for _, u := range []string{"http://mods.example.test/", "https://user:pw@mods.example.test/", "https://mods.example.test/?token=x", "https:///x"} {
		_, err := NewClient(u)
		require.ErrorIs(t, err, ErrBadOption, u)
		require.NotContains(t, err.Error(), "pw")
	}
	store, err := modstore.Open(t.TempDir())
	require.NoError(t, err)
	_, err = Handler(store, WithToken(""))
	require.ErrorIs(t, err, ErrBadOption)
}

// writeCert writes the server's certificate as a PEM file.
func writeCert(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.pem")
	require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	return p
}

// newGitUpstream is a loopback git server with repository hello, tags
// v1.0.0 and v1.1.0 (each saying its version in an output), trusted by
// every git of this test and its children (GIT_SSL_CAINFO: httptest's
// certificate, which the module server's is too).
func newGitUpstream(t *testing.T) *testregistry.GitServer {
	t.Helper()
	g := testregistry.StartGit(t, t.TempDir())
	files := map[string]map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		files["v"+v] = map[string]string{"main.tf": `output "greeting" { value = "hello ` + v + `" }` + "\n"}
	}
	require.NoError(t, g.AddRepo("hello", []string{"v1.0.0", "v1.1.0"}, files))
	ca := filepath.Join(t.TempDir(), "git-ca.pem")
	require.NoError(t, g.WriteCAFile(ca))
	t.Setenv("GIT_SSL_CAINFO", ca)
	return g
}

// TestGitFleetClonesOnce: four machines clone a git module's repository
// through the server at once (their git's insteadOf, GitConfig, with the
// token): upstream is cloned once, each machine checks out both tags
// from the server's copy; a wrong token is refused; a path leaving the
// repository is 400.
func TestGitFleetClonesOnce(t *testing.T) {
	g := newGitUpstream(t)
	w := newWorld(t)
	c := w.client(t)
	gitEnv := func(token string) []string {
		env := os.Environ()
		for k, v := range c.GitConfig([]string{g.Host()}, token, 0) {
			env = append(env, k+"="+v)
		}
		return append(env, "GIT_TERMINAL_PROMPT=0")
	}
	url := "https://" + g.Host() + "/hello.git"
	var wg sync.WaitGroup
	errs := make([]error, 4)
	outs := make([]string, 4)
	dirs := make([]string, 4)
	for i := range errs {
		dirs[i] = filepath.Join(t.TempDir(), "clone")
		wg.Go(func() {
			cmd := exec.CommandContext(ctxT(t), "git", "clone", "--quiet", "--branch", "v1.0.0", url, dirs[i])
			cmd.Env = gitEnv(w.token)
			b, err := cmd.CombinedOutput()
			errs[i], outs[i] = err, string(b)
		})
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i], outs[i])
		b, err := os.ReadFile(filepath.Join(dirs[i], "main.tf"))
		require.NoError(t, err)
		require.Contains(t, string(b), "hello 1.0.0")
	}
	require.Equal(t, 1, g.Fetches("hello"), "one upstream clone for the fleet")

	denied := filepath.Join(t.TempDir(), "denied")
	cmd := exec.CommandContext(ctxT(t), "git", "clone", "--quiet", url, denied)
	cmd.Env = gitEnv("wrong")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, string(out)) // git asks for credentials after the 401, and may not prompt
	require.NoFileExists(t, filepath.Join(denied, "main.tf"))

	_, _, err = gitRepo("127.0.0.1:1/hello.git/../../etc/passwd")
	require.ErrorIs(t, err, ErrBadModule)
	_, _, err = gitRepo("127.0.0.1:1/hello/info/refs")
	require.ErrorIs(t, err, ErrBadModule)
}

// TestHostsLimitWhatIsFetched: a server limited to other hosts
// (WithHosts) fetches nothing for a module or repository on this one:
// 404, and the upstream sees no request for it.
func TestHostsLimitWhatIsFetched(t *testing.T) {
	g := newGitUpstream(t)
	w := newWorld(t, WithHosts("registry.other.test"))
	status, err := w.getLikeTerraform(ctxT(t), w.mod, t.TempDir())
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 0, w.downloads())
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, w.srv.URL+"/git/"+g.Host()+"/hello.git/info/refs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, 0, g.Fetches("hello"))
	_, err = Handler(nil)
	require.ErrorIs(t, err, ErrBadOption)
	store, err := modstore.Open(t.TempDir())
	require.NoError(t, err)
	_, err = Handler(store, WithHosts("bad host"))
	require.ErrorIs(t, err, ErrBadOption)
}
