package modserve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// Git modules are served as repositories over git's dumb HTTP protocol
// (static files: info/refs, HEAD, objects/...), which every git client
// reads and which needs nothing of the server but the files:
//
//	GET /git/HOST/PATH.git/info/refs   (and HEAD, objects/...)
//
// A repository the store lacks is cloned from https://HOST/PATH.git
// (git clone --mirror, then update-server-info) under the store's flock,
// so the fleet clones it from upstream once; it is cloned again, in place
// of the stored one, when its refs were listed more than WithGitRefresh
// ago, so a branch moves on as upstream's does. A machine's git reaches
// the server through url.<server>/git/HOST/.insteadOf = https://HOST/
// (GitConfig), so terraform fetches `git::https://HOST/PATH.git?ref=...`
// sources through it unchanged; the module's ref is checked out by the
// machine's own git, from the server's copy.

// DefaultGitRefresh is how long a repository's refs are served before it
// is cloned from upstream again, unless WithGitRefresh says otherwise.
const DefaultGitRefresh = 5 * time.Minute

// gitRepo splits a /git/ request path below the prefix into the
// repository (HOST/PATH.git) and the file of it, refusing anything that
// is not a repository path ending in .git or leaves it.
func gitRepo(rest string) (repo, file string, err error) {
	i := strings.Index(rest, ".git/")
	if i < 0 {
		return "", "", fmt.Errorf("%w: git path %q: want HOST/PATH.git/FILE", ErrBadModule, rest)
	}
	repo, file = rest[:i+len(".git")], rest[i+len(".git/"):]
	host, p, _ := strings.Cut(repo, "/")
	if !hostRE.MatchString(host) || p == "" {
		return "", "", fmt.Errorf("%w: git path %q: bad host %q", ErrBadModule, rest, host)
	}
	for _, part := range strings.Split(repo+"/"+file, "/") {
		if part == "" || part == "." || part == ".." || strings.HasPrefix(part, "-") {
			return "", "", fmt.Errorf("%w: git path %q: an empty, . , .. or option-like part", ErrBadModule, rest)
		}
	}
	if path.Clean(file) != file {
		return "", "", fmt.Errorf("%w: git path %q is not clean", ErrBadModule, rest)
	}
	return repo, file, nil
}

func gitKey(repo string) string { return "modserve " + keyVersion + " git https://" + repo }

func (h *handler) git(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r, "") {
		return
	}
	repo, file, err := gitRepo(r.PathValue("rest"))
	if err == nil {
		host, _, _ := strings.Cut(repo, "/")
		err = h.allowed(host)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.cfg.fillTimeout)
	defer cancel()
	key := gitKey(repo)
	clone := func(ctx context.Context, dir string) error {
		h.cfg.log.Info("cloning a git module repository from upstream", "repo", "https://"+repo)
		if err := h.cloneGit(ctx, "https://"+repo, dir); err != nil {
			return err
		}
		h.noteRefreshed(key) // before the lock is released: no waiter clones again
		return nil
	}
	dir, _, err := h.s.Get(ctx, key, clone)
	if err == nil && file == "info/refs" && h.stale(key) {
		// Asked again under the key's lock: of many listings at once,
		// one clones.
		fresh := func(string) (bool, error) { return !h.stale(key), nil }
		dir, _, err = h.s.Replace(ctx, key, fresh, clone)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rec, err := h.s.Record(key)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	b, err := readRecorded(dir, rec, file, h.cfg.maxSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if strings.HasPrefix(file, "objects/pack/") || strings.HasPrefix(file, "objects/") && !strings.HasPrefix(file, "objects/info/") {
		w.Header().Set("Content-Type", "application/octet-stream")
	} else {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", "no-cache")
	}
	_, _ = w.Write(b)
}

// stale reports whether key's refs were last fetched from upstream (by
// this handler) longer than the refresh ago, or never by it: a server
// started on a store filled earlier clones again on its first listing.
func (h *handler) stale(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.refreshed[key]
	return !ok || time.Since(t) > h.cfg.gitRefresh
}

func (h *handler) noteRefreshed(key string) {
	h.mu.Lock()
	h.refreshed[key] = time.Now()
	h.mu.Unlock()
}

// readRecorded reads file of the tree at dir, checked against its record
// (a regular file of it, its size and SHA-256): anything else is 404, a
// file that changed since it was recorded an error.
func readRecorded(dir string, rec treesum.Tree, file string, max int64) ([]byte, error) {
	var e *treesum.Entry
	for i := range rec {
		if rec[i].Path == file {
			e = &rec[i]
			break
		}
	}
	if e == nil || !e.Mode.IsRegular() {
		return nil, &httpError{http.StatusNotFound, fmt.Errorf("no file %s in the repository", file)}
	}
	if e.Size > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", file, max)
	}
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, e.Size+1))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != e.Size || hex.EncodeToString(sum[:]) != e.SHA256 {
		return nil, fmt.Errorf("%s changed since the repository was stored", file)
	}
	return b, nil
}

// cloneGit mirrors the repository at url into dir and prepares it for
// dumb HTTP: update-server-info, no hooks. git runs with the process's
// environment (its CA settings, GIT_SSL_CAINFO among them), never
// prompting, bounded by ctx.
func (h *handler) cloneGit(ctx context.Context, url, dir string) error {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=")
		cmd.WaitDelay = 10 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%w: git %s: %v: %s", ErrUpstream, args[0], err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	if err := run("clone", "--mirror", "--quiet", "--", url, dir); err != nil {
		return err
	}
	if err := run("-C", dir, "update-server-info"); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(dir, "hooks"))
}

// GitConfig is the git configuration (as GIT_CONFIG_COUNT,
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n variables, numbered from
// first) that sends a machine's git fetches of https://HOST/ for each of
// hosts to the server, with the token (if any) as a bearer header sent
// to the server only.
func (c *Client) GitConfig(hosts []string, token string, first int) map[string]string {
	env := map[string]string{}
	n := first
	set := func(k, v string) {
		env[fmt.Sprintf("GIT_CONFIG_KEY_%d", n)] = k
		env[fmt.Sprintf("GIT_CONFIG_VALUE_%d", n)] = v
		n++
	}
	for _, h := range hosts {
		set("url."+c.base.JoinPath("git", h).String()+"/.insteadOf", "https://"+h+"/")
	}
	if token != "" {
		set("http."+c.base.String()+".extraHeader", "Authorization: Bearer "+token)
	}
	env["GIT_CONFIG_COUNT"] = fmt.Sprint(n)
	return env
}

// GitHost returns the host of a git module source over https
// (git::https://HOST/PATH.git, with an optional ?ref= and //subdir) and
// whether source is one.
func GitHost(source string) (string, bool) {
	rest, ok := strings.CutPrefix(source, "git::https://")
	if !ok {
		return "", false
	}
	host, p, _ := strings.Cut(rest, "/")
	p, _, _ = strings.Cut(p, "?")
	p, _, _ = strings.Cut(p, "//")
	if !hostRE.MatchString(host) || !strings.HasSuffix(p, ".git") {
		return "", false
	}
	return strings.ToLower(host), true
}
