package pluginc

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/flight"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// DefaultMirrorRefresh is how long the mirror answers index.json from the
// version lists it fetched before it asks the cache's sources again.
const DefaultMirrorRefresh = 5 * time.Minute

// MirrorOption configures the handler MirrorHandler returns.
type MirrorOption interface {
	apply(*mirrorConfig)
}

type mirrorOptionFunc func(*mirrorConfig)

func (f mirrorOptionFunc) apply(c *mirrorConfig) { f(c) }

type mirrorConfig struct {
	token   string
	refresh time.Duration
}

// WithMirrorToken makes the mirror answer only requests carrying
// "Authorization: Bearer token" (what Terraform and NetworkMirror send
// for a TF_TOKEN_<host> or a credentials block of the mirror's host);
// any other request gets 401 Unauthorized. The token is compared in
// constant time and never logged. An empty token means no check.
func WithMirrorToken(token string) MirrorOption {
	return mirrorOptionFunc(func(c *mirrorConfig) { c.token = token })
}

// WithMirrorRefresh sets how long version lists are kept before the
// cache's sources are asked again (DefaultMirrorRefresh without it), so a
// long-running mirror offers new releases. d <= 0 keeps the default.
func WithMirrorRefresh(d time.Duration) MirrorOption {
	return mirrorOptionFunc(func(c *mirrorConfig) {
		if d > 0 {
			c.refresh = d
		}
	})
}

// MirrorHandler returns an http.Handler that serves the cache to other
// machines as a provider network mirror (Terraform's protocol, what
// NetworkMirror and a CLI config's network_mirror block read), so a
// fleet of machines downloads each package from upstream once:
//
//	GET /HOSTNAME/NAMESPACE/TYPE/index.json      {"versions":{"1.2.0":{}}}
//	GET /HOSTNAME/NAMESPACE/TYPE/VERSION.json    {"archives":{"linux_amd64":{"url":"...","hashes":["h1:...","zh:..."]}}}
//	GET /HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip
//
// Paths are relative to where the host mounts the handler (with
// http.StripPrefix under a prefix); archive URLs are relative, so they
// follow. TLS is the host's: serve the handler from an http.Server with
// its own certificate, since clients speak https only.
//
// Versions are what the cache's sources list (fetched again after
// WithMirrorRefresh); archives are offered for the cache's platforms
// (WithPlatforms). A VERSION.json or archive request fills a missing
// package through Ensure's own path: the cache's sources, verified,
// under the package's flock, so concurrent requests for one package, in
// this process and in any other process sharing the cache dir, cause
// one upstream download; a fill goes on when the client that asked for
// it goes away, so the next request does not download it again. The archive is the verified entry packed again
// deterministically (files in path order, modes kept, a fixed time,
// stored uncompressed: the same bytes from any build of the mirror, and
// no CPU spent per request): its h1: is the entry's, and VERSION.json lists the hashes the
// cache recorded at install (the h1: and the zh: of every platform the
// upstream vouched for), so a client checks the archive by its h1: and
// a lock file made from a direct install verifies against it. Each
// file's SHA-256 is checked against the install record while it is
// sent; a file that changed since cuts the response, so a client never
// gets bytes the cache did not verify.
//
// Requests fail with a clear status and a one-line message: 400 for a
// malformed path (a bad provider address, a version that is not one, a
// path trying to leave the tree), 404 for a provider, version or
// platform the mirror does not offer, 405 for methods other than GET and
// HEAD, 401 without the token (WithMirrorToken), 502 when the upstream
// fails, 500 when the cache itself is unsafe (ErrUnsafePath). Failures
// are logged (Warn) on the cache's logger with the path and the error,
// never a request header.
func (c *Cache) MirrorHandler(opts ...MirrorOption) http.Handler {
	cfg := mirrorConfig{refresh: DefaultMirrorRefresh}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	return &mirror{c: c, cfg: cfg, listed: map[Provider]time.Time{}, lists: flight.Group[*listing]{Forget: true}}
}

// mirror is the handler MirrorHandler returns.
type mirror struct {
	c   *Cache
	cfg mirrorConfig

	mu     sync.Mutex
	listed map[Provider]time.Time // when the cache's listing of each provider was fetched by the mirror
	lists  flight.Group[*listing] // one refresh per provider at a time
}

// mirrorError is a request's failure with its HTTP status.
type mirrorError struct {
	status int
	err    error
}

func (e *mirrorError) Error() string { return e.err.Error() }
func (e *mirrorError) Unwrap() error { return e.err }

func badRequest(format string, a ...any) error {
	return &mirrorError{status: http.StatusBadRequest, err: fmt.Errorf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &mirrorError{status: http.StatusNotFound, err: fmt.Errorf(format, a...)}
}

// statusOf maps a failure to its status: the mirror's own, 404 for what
// the upstream does not offer, 502 for any other upstream failure.
func statusOf(err error) int {
	var me *mirrorError
	switch {
	case errors.As(err, &me):
		return me.status
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrLockedVersion):
		return http.StatusNotFound
	case errors.Is(err, ErrUnsafePath):
		return http.StatusInternalServerError // the mirror's own cache, not the upstream
	}
	return http.StatusBadGateway
}

// ServeHTTP answers one mirror request.
func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !m.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="provider mirror"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if err := m.serve(w, r); err != nil {
		status := statusOf(err)
		if r.Context().Err() == nil {
			m.c.log.Warn("provider mirror request failed", "path", r.URL.Path, "status", status, "error", err)
		}
		http.Error(w, oneLine(err.Error()), status)
	}
}

// authorized checks the bearer token, in constant time.
func (m *mirror) authorized(r *http.Request) bool {
	if m.cfg.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(m.cfg.token)) == 1
}

// serve routes a request by its path. An error means nothing was written.
func (m *mirror) serve(w http.ResponseWriter, r *http.Request) error {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 4 {
		return badRequest("bad mirror path %q: want /HOSTNAME/NAMESPACE/TYPE/FILE", r.URL.Path)
	}
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return badRequest("bad mirror path %q: empty, . or .. part", r.URL.Path)
		}
	}
	addr := parts[0] + "/" + parts[1] + "/" + parts[2]
	p, err := ParseProvider(addr)
	if err != nil {
		return badRequest("bad mirror path %q: %v", r.URL.Path, err)
	}
	file := parts[3]
	switch {
	case file == "index.json":
		return m.index(w, r, p)
	case strings.HasSuffix(file, ".zip"):
		return m.archive(w, r, p, file)
	case strings.HasSuffix(file, ".json"):
		return m.version(w, r, p, strings.TrimSuffix(file, ".json"))
	}
	return notFound("no such mirror file %q", r.URL.Path)
}

// index answers index.json: the versions the cache's sources list.
func (m *mirror) index(w http.ResponseWriter, r *http.Request, p Provider) error {
	l, err := m.listing(r.Context(), p)
	if err != nil {
		return err
	}
	vs := map[string]struct{}{}
	for _, v := range l.versions {
		vs[v.String()] = struct{}{}
	}
	return writeMirrorJSON(w, r, map[string]any{"versions": vs})
}

// version answers VERSION.json: an archive per platform of the cache
// that the upstream has, each package ensured first, so its hashes are
// the ones recorded at install.
func (m *mirror) version(w http.ResponseWriter, r *http.Request, p Provider, ver string) error {
	v, err := m.offered(r.Context(), p, ver)
	if err != nil {
		return err
	}
	type archive struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	}
	archives := map[string]archive{}
	for _, plat := range m.c.platforms {
		pkg, err := m.c.ensurePackage(fillContext(r), PackageID{Provider: p, Version: v, Platform: plat})
		if errors.Is(err, ErrNotFound) && len(m.c.platforms) > 1 {
			continue // the upstream does not build this platform; the others are still served
		}
		if err != nil {
			return err
		}
		archives[plat] = archive{URL: archiveName(p, v, plat), Hashes: pkg.Hashes}
	}
	if len(archives) == 0 {
		return notFound("version %s of %s has a package for none of the mirror's platforms (%s)", v, p, strings.Join(m.c.platforms, ", "))
	}
	return writeMirrorJSON(w, r, map[string]any{"archives": archives})
}

// archive streams the package a .zip path names, packed from its
// verified entry.
func (m *mirror) archive(w http.ResponseWriter, r *http.Request, p Provider, file string) error {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(file, ".zip"), "terraform-provider-"+p.Type+"_")
	if !ok {
		return notFound("no such archive %q: want terraform-provider-%s_VERSION_OS_ARCH.zip", file, p.Type)
	}
	// VERSION_OS_ARCH: a version never holds "_", a platform holds one.
	i := strings.LastIndex(rest, "_")
	j := -1
	if i > 0 {
		j = strings.LastIndex(rest[:i], "_")
	}
	if j <= 0 {
		return badRequest("bad archive name %q: want terraform-provider-%s_VERSION_OS_ARCH.zip", file, p.Type)
	}
	plat := rest[j+1:]
	if !slices.Contains(m.c.platforms, plat) {
		return notFound("platform %q is not served by this mirror (it serves %s)", plat, strings.Join(m.c.platforms, ", "))
	}
	v, err := m.offered(r.Context(), p, rest[:j])
	if err != nil {
		return err
	}
	id := PackageID{Provider: p, Version: v, Platform: plat}
	if _, err := m.c.ensurePackage(fillContext(r), id); err != nil {
		return err
	}
	files, err := m.verifiedFiles(fillContext(r), id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/zip")
	if r.Method == http.MethodHead {
		return nil
	}
	if err := packEntry(w, m.c.pkgDir(id), files); err != nil {
		// Headers and part of the body are out: only cutting the
		// connection tells the client the archive is incomplete.
		if r.Context().Err() == nil {
			m.c.log.Warn("provider mirror cut an archive short", "path", r.URL.Path, "package", id.String(), "error", err)
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

// fillContext is the context a request fills a package under: the
// request's values without its end, so a fill goes on when the client
// that asked for it goes away (bounded by the cache's own network
// limits, as every fill) and the next request finds the package instead
// of downloading it again.
func fillContext(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

// verifiedFiles returns the record of the entry's files that the archive
// is checked against while it is sent: this process's proof in a shared
// cache (where no record is believed), the install record otherwise. An
// entry changed since ensurePackage is ensured once more (repaired).
func (m *mirror) verifiedFiles(ctx context.Context, id PackageID) (treesum.Tree, error) {
	for range 2 {
		if m.c.trust.shared {
			if pr, ok := m.c.proven(id); ok && pr.fromSource {
				return pr.files, nil
			}
		} else if e := m.c.check(id); e.err != nil {
			return nil, e.err
		} else if e.state == entryOK {
			return e.meta.Files, nil
		}
		if _, err := m.c.ensurePackage(ctx, id); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %s changed while it was being served", ErrDamagedEntry, m.c.pkgDir(id))
}

// offered returns the version ver spells if the cache's sources offer it.
func (m *mirror) offered(ctx context.Context, p Provider, ver string) (string, error) {
	v, err := parseVersion(ver)
	if err != nil || v.String() != ver {
		return "", badRequest("bad version %q of %s: want MAJOR.MINOR.PATCH", ver, p)
	}
	l, err := m.listing(ctx, p)
	if err != nil {
		return "", err
	}
	if _, ok := l.offers[ver]; !ok {
		return "", notFound("version %s of %s is offered by none of the mirror's sources; available versions: %s", ver, p, listVersions(l.versions))
	}
	return ver, nil
}

// listing returns the cache's listing of p, asking the sources again
// once it is older than the refresh period. A refresh replaces the
// cache's own listing, so Ensure installs what index.json lists.
func (m *mirror) listing(ctx context.Context, p Provider) (*listing, error) {
	m.mu.Lock()
	at, ok := m.listed[p]
	m.mu.Unlock()
	if ok && time.Since(at) < m.cfg.refresh {
		if l, err := m.c.listing(ctx, p); err == nil {
			return l, nil
		}
	}
	l, _, err := m.lists.Do(ctx, p.String(), "another mirror request listing "+p.String(), func() (*listing, error) {
		l, err := m.c.list(ctx, p)
		if err != nil {
			return nil, err
		}
		m.c.mu.Lock()
		m.c.listings[p] = l
		m.c.mu.Unlock()
		m.mu.Lock()
		m.listed[p] = time.Now()
		m.mu.Unlock()
		return l, nil
	})
	return l, err
}

// archiveName is the archive's file name, the URL VERSION.json gives
// (relative to it).
func archiveName(p Provider, v, platform string) string {
	return "terraform-provider-" + p.Type + "_" + v + "_" + platform + ".zip"
}

// archiveTime is the time every packed file carries, so the same entry
// always packs to the same bytes.
var archiveTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// packEntry writes the files of dir that rec lists as a zip to w:
// regular files only (h1: counts nothing else), in path order, with their
// recorded modes and a fixed time, stored (deflate's output may change
// from one Go release to the next, and would cost CPU on every request),
// each checked against its recorded size and SHA-256 as it is read. An
// error means the zip is incomplete.
func packEntry(w io.Writer, dir string, rec treesum.Tree) error {
	files := slices.Clone(rec)
	slices.SortFunc(files, func(a, b treesum.Entry) int { return strings.Compare(a.Path, b.Path) })
	zw := zip.NewWriter(w)
	for _, f := range files {
		if !f.Mode.IsRegular() {
			continue
		}
		h := &zip.FileHeader{Name: f.Path, Method: zip.Store, Modified: archiveTime}
		h.SetMode(f.Mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if err := copyVerified(fw, filepath.Join(dir, filepath.FromSlash(f.Path)), f); err != nil {
			return err
		}
	}
	return zw.Close()
}

// copyVerified copies the file at path to w and fails if it is not the
// size and SHA-256 recorded for it.
func copyVerified(w io.Writer, path string, want treesum.Entry) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(fh, want.Size+1))
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); n != want.Size || got != want.SHA256 {
		return fmt.Errorf("%w: %s is not the file verified at install (size %d, SHA-256 %s; recorded %d, %s)", ErrDamagedEntry, path, n, got, want.Size, want.SHA256)
	}
	return nil
}

// writeMirrorJSON writes a mirror document.
func writeMirrorJSON(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodHead {
		return nil
	}
	_, _ = w.Write(b)
	return nil
}
