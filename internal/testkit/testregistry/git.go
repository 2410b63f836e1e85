package testregistry

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// GitServer serves bare git repositories on loopback HTTPS over git's
// dumb HTTP protocol (static files, as any git client reads them), and
// counts each repository's fetches (its info/refs requests: one per
// clone or fetch), so tests of module fetching can observe exactly-once
// clones of git modules. Its certificate is httptest's, valid for
// 127.0.0.1; WriteCAFile writes it for GIT_SSL_CAINFO.
type GitServer struct {
	srv  *httptest.Server
	root string

	mu      sync.Mutex
	fetches map[string]int
}

// StartGit starts a GitServer serving repositories under a temp dir, for
// tests; it is closed when the test ends.
func StartGit(tb TB, dir string) *GitServer {
	tb.Helper()
	g := &GitServer{root: dir, fetches: map[string]int{}}
	files := http.FileServer(http.Dir(dir))
	g.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if repo, ok := strings.CutSuffix(r.URL.Path, ".git/info/refs"); ok {
			g.mu.Lock()
			g.fetches[strings.TrimPrefix(repo, "/")]++
			g.mu.Unlock()
		}
		files.ServeHTTP(w, r)
	}))
	tb.Cleanup(g.srv.Close)
	return g
}

// AddRepo creates repository name (served as NAME.git) with one commit
// per tag, in the order given, each holding exactly that tag's files
// (slash-separated paths and their content), tagged with its name.
func (g *GitServer) AddRepo(name string, tags []string, files map[string]map[string]string) error {
	work := filepath.Join(g.root, ".work-"+name)
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.test", "GIT_CONFIG_NOSYSTEM=1", "HOME="+g.root)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("testregistry: git %s: %v: %s", strings.Join(args, " "), err, out.String())
		}
		return nil
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if err := git(work, "init", "--quiet", "--initial-branch=main"); err != nil {
		return err
	}
	for _, tag := range tags {
		old, _ := filepath.Glob(filepath.Join(work, "*"))
		for _, o := range old {
			if filepath.Base(o) == ".git" {
				continue
			}
			if err := os.RemoveAll(o); err != nil {
				return err
			}
		}
		names := make([]string, 0, len(files[tag]))
		for n := range files[tag] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			p := filepath.Join(work, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(files[tag][n]), 0o644); err != nil {
				return err
			}
		}
		for _, args := range [][]string{{"add", "-A"}, {"commit", "--quiet", "-m", tag}, {"tag", tag}} {
			if err := git(work, args...); err != nil {
				return err
			}
		}
	}
	bare := filepath.Join(g.root, name+".git")
	if err := git(g.root, "clone", "--bare", "--quiet", work, bare); err != nil {
		return err
	}
	return git(bare, "update-server-info")
}

// Source is the module source address of repository name at ref:
// git::https://ADDR/NAME.git?ref=REF.
func (g *GitServer) Source(name, ref string) string {
	return "git::" + g.srv.URL + "/" + name + ".git?ref=" + ref
}

// Host is the server's loopback address, as its URLs name it.
func (g *GitServer) Host() string { return g.srv.Listener.Addr().String() }

// Fetches returns how many times repository name was cloned or fetched.
func (g *GitServer) Fetches(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fetches[name]
}

// WriteCAFile writes the server's certificate (httptest's, the same for
// every httptest TLS server) to path, for GIT_SSL_CAINFO.
func (g *GitServer) WriteCAFile(path string) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: g.srv.Certificate().Raw}), 0o644)
}
