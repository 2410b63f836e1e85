package modserve

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/internal/testregistry"
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
	var err error
	w.mod, err = ParseModule(w.reg.ModuleSource("tfisolate", "greet", "tfitest"), "1.0.0")
	require.NoError(t, err)
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

func (w *world) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(w.srv.URL, append([]Option{WithToken(w.token), WithHTTPClient(w.srv.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

// upstream is what a machine falls back to: the registry itself.
func (w *world) upstream(t *testing.T) func(context.Context, string) error {
	t.Helper()
	up, err := Upstream(w.mod, WithHTTPClient(w.reg.HTTPClient()))
	require.NoError(t, err)
	return up
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestFleetFetchesOnce: eight machines (stores of their own) ask the
// server for one module at once, from a cold start: the upstream archive
// is downloaded once, every machine's store holds the same tree as the
// upstream's, and nobody fell back.
func TestFleetFetchesOnce(t *testing.T) {
	w := newWorld(t)
	c := w.client(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		fbs  []Fallback
		dirs = make([]string, 8)
		errs = make([]error, 8)
	)
	for i := range dirs {
		s, err := modstore.Open(filepath.Join(t.TempDir(), "machine"))
		require.NoError(t, err)
		wg.Go(func() {
			dirs[i], _, errs[i] = s.Get(ctxT(t), "greet 1.0.0", c.Fill(w.mod, "the registry", w.upstream(t), func(f Fallback) {
				mu.Lock()
				fbs = append(fbs, f)
				mu.Unlock()
			}))
		})
	}
	wg.Wait()
	for i := range dirs {
		require.NoError(t, errs[i])
		b, err := os.ReadFile(filepath.Join(dirs[i], "main.tf"))
		require.NoError(t, err)
		require.Contains(t, string(b), `"1.0.0"`)
		require.FileExists(t, filepath.Join(dirs[i], "modules", "x", "x.tf"))
	}
	require.Empty(t, fbs)
	require.Equal(t, 1, w.downloads(), "one upstream download for the fleet")
}

// TestServerDownFallsBack: a machine whose server is down (closed:
// refusing connections) or failing (500) fetches from upstream and says
// so: a Fallback naming the server and where the tree came from. With no
// upstream, the server's failure is the fill's error.
func TestServerDownFallsBack(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		w := newWorld(t)
		c := w.client(t)
		w.srv.Close()
		checkFallback(t, w, c)
	})
	t.Run("500", func(t *testing.T) {
		w := newWorld(t)
		broken := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			http.Error(rw, "boom", http.StatusInternalServerError)
		}))
		t.Cleanup(broken.Close)
		c, err := NewClient(broken.URL, WithHTTPClient(broken.Client()))
		require.NoError(t, err)
		checkFallback(t, w, c)
	})
	t.Run("no upstream", func(t *testing.T) {
		w := newWorld(t)
		c := w.client(t)
		w.srv.Close()
		s, err := modstore.Open(filepath.Join(t.TempDir(), "machine"))
		require.NoError(t, err)
		_, _, err = s.Get(ctxT(t), "greet 1.0.0", c.Fill(w.mod, "", nil, nil))
		require.ErrorIs(t, err, ErrServer)
		require.ErrorContains(t, err, w.srv.URL)
	})
}

func checkFallback(t *testing.T, w *world, c *Client) {
	t.Helper()
	s, err := modstore.Open(filepath.Join(t.TempDir(), "machine"))
	require.NoError(t, err)
	var fbs []Fallback
	dir, _, err := s.Get(ctxT(t), "greet 1.0.0", c.Fill(w.mod, "the registry", w.upstream(t), func(f Fallback) { fbs = append(fbs, f) }))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "main.tf"))
	require.Len(t, fbs, 1)
	require.Equal(t, c.URL(), fbs[0].Server)
	require.Equal(t, w.mod.String(), fbs[0].Module)
	require.Equal(t, "the registry", fbs[0].Used)
	require.Contains(t, fbs[0].String(), "module server "+c.URL()+" failed to deliver "+w.mod.String())
	require.NotContains(t, fbs[0].String(), testToken)
	require.Equal(t, 1, w.downloads())
}

// TestDigestMismatchRefused: a server whose tree is not the one its
// digest names (a file changed on the way) is refused with ErrDigest and
// leaves the dir empty; through Fill the machine falls back to upstream.
func TestDigestMismatchRefused(t *testing.T) {
	w := newWorld(t)
	// A man in the middle: the real server's answer with one byte of the
	// archive's content changed, its digest header kept.
	mitm := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, w.srv.URL+r.URL.Path, nil)
		req.Header = r.Header.Clone()
		resp, err := w.srv.Client().Do(req)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		dir := t.TempDir()
		require.NoError(t, unpack(bytesReader(body), "tar.gz", dir, DefaultMaxSize))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`output "version" { value = "6.6.6" }`+"\n"), 0o644))
		rec, err := recordFor(dir)
		require.NoError(t, err)
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.Header().Del("Content-Length")
		_, err = pack(rw, dir, rec)
		require.NoError(t, err)
	}))
	t.Cleanup(mitm.Close)
	c, err := NewClient(mitm.URL, WithToken(w.token), WithHTTPClient(mitm.Client()))
	require.NoError(t, err)
	dir := t.TempDir()
	err = c.Fetch(ctxT(t), w.mod, dir)
	require.ErrorIs(t, err, ErrDigest)
	ents, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	require.Empty(t, ents, "nothing of a tree that failed its digest is kept")

	s, err := modstore.Open(filepath.Join(t.TempDir(), "machine"))
	require.NoError(t, err)
	var fbs []Fallback
	got, _, err := s.Get(ctxT(t), "greet 1.0.0", c.Fill(w.mod, "the registry", w.upstream(t), func(f Fallback) { fbs = append(fbs, f) }))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(got, "main.tf"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"1.0.0"`)
	require.Len(t, fbs, 1)
	require.Contains(t, fbs[0].Err, ErrDigest.Error())
}

// TestToken: without the token every route answers 401 (the tree route
// too, unless its location carries the signature a download answer put
// on it); a wrong token is refused; the client with the token fetches.
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
	require.NoError(t, w.client(t).Fetch(ctxT(t), w.mod, t.TempDir()))
	require.Equal(t, 1, w.downloads())
}

// TestBadRequests: a malformed module path is 400, a version the
// upstream lacks 404, and neither reaches the store.
func TestBadRequests(t *testing.T) {
	w := newWorld(t)
	c := w.client(t)
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
	err := c.Fetch(ctxT(t), missing, t.TempDir())
	require.ErrorIs(t, err, ErrServer)
	require.ErrorContains(t, err, "404")
}

// TestNewClientRefusesURLs: only https, and nothing secret in the URL.
func TestNewClientRefusesURLs(t *testing.T) {
	for _, u := range []string{"http://mods.example.test/", "https://user:pw@mods.example.test/", "https://mods.example.test/?token=x", "https:///x"} {
		_, err := NewClient(u)
		require.ErrorIs(t, err, ErrBadOption, u)
		require.NotContains(t, err.Error(), "pw")
	}
	_, err := NewClient("https://mods.example.test/", WithToken(""))
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
	err := w.client(t).Fetch(ctxT(t), w.mod, t.TempDir())
	require.ErrorIs(t, err, ErrServer)
	require.ErrorContains(t, err, "404")
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
	_, err = NewClient("https://mods.example.test/", WithHosts("bad host"))
	require.ErrorIs(t, err, ErrBadOption)
}
