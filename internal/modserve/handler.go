package modserve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// Handler returns an http.Handler serving the module store s to a fleet:
//
//	GET /modules.v1/HOST/NS/NAME/SYSTEM/versions          the upstream's version list (modules.v1)
//	GET /modules.v1/HOST/NS/NAME/SYSTEM/VERSION/download  204, X-Terraform-Get: the tree archive
//	GET /v1/tree/HOST/NS/NAME/SYSTEM/VERSION.tar.gz       the verified tree (the download answer's location)
//	GET /git/HOST/PATH.git/FILE                           a git module repository (git.go)
//
// Paths are relative to where the host mounts the handler (with
// http.StripPrefix under a prefix); the download answer's location is
// relative, so it follows. TLS is the host's: serve it from an
// http.Server with a certificate (clients speak https only). Plain
// terraform reaches it through a CLI config host block for the registry
// host, "modules.v1" = "https://SERVER/modules.v1/HOST/" (what the
// runner writes for each registry host a unit's modules call).
//
// A download answer or tree request for a package the store lacks fills
// it from the package's own registry (service discovery, download answer,
// its tar.gz or zip archive), under the store's per-key flock, so
// concurrent requests, in this process and any other sharing the store
// dir, cause one upstream download; a fill goes on (bounded by
// WithFillTimeout) when the client that asked goes away. The archive is
// the stored tree packed deterministically (the same bytes each time),
// each file checked against the entry's manifest while it is read: a
// file changed since cuts the answer. The download answer's location
// carries the archive's SHA-256 as go-getter's checksum parameter, so
// terraform checks the archive before it unpacks it.
//
// With WithToken every request must carry the token, except a tree
// request whose location a download answer gave (it carries a signature
// made with the token, since terraform sends no credentials to an
// archive location). Requests fail with a one-line message: 400 for a
// malformed path, 401 without the token, 404 for what the upstream does
// not offer, 405 for methods other than GET and HEAD, 502 when the
// upstream fails, 500 when the store does. Failures are logged (Warn)
// with the path, never a header or query.
func Handler(s *modstore.Store, opts ...Option) (http.Handler, error) {
	if s == nil {
		return nil, fmt.Errorf("modserve: handler: %w: nil store", ErrBadOption)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	h := &handler{s: s, cfg: cfg, up: &upstream{client: cfg.client, maxSize: cfg.maxSize, token: func(host string) string { return cfg.upTokens[host] }},
		sums: map[string]string{}, refreshed: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /modules.v1/{host}/{ns}/{name}/{system}/versions", h.versions)
	mux.HandleFunc("GET /modules.v1/{host}/{ns}/{name}/{system}/{version}/download", h.download)
	mux.HandleFunc("GET /v1/tree/{host}/{ns}/{name}/{system}/{file}", h.tree)
	mux.HandleFunc("GET /git/{rest...}", h.git)
	h.mux = mux
	return h, nil
}

type handler struct {
	s   *modstore.Store
	cfg config
	up  *upstream
	mux *http.ServeMux

	mu        sync.Mutex
	sums      map[string]string    // archive SHA-256 by store key and tree digest: an entry filled again since (by any process sharing the store) is packed again
	refreshed map[string]time.Time // when each git repository was last cloned by this handler
}

// httpError is a request's failure with its status.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func statusOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.status
	case errors.Is(err, ErrBadModule):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrUpstream), errors.Is(err, ErrBadArchive), errors.Is(err, modstore.ErrFill):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// fail answers a failed request and logs it.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if r.Context().Err() == nil {
		h.cfg.log.Warn("module server request failed", "path", r.URL.Path, "status", status, "error", err)
	}
	http.Error(w, strings.ReplaceAll(err.Error(), "\n", " "), status)
}

// authorized checks the bearer token in constant time; sig, when not
// empty, is the signature a download answer put on a tree location.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request, sig string) bool {
	if h.cfg.token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(h.cfg.token)) == 1 {
		return true
	}
	if sig != "" && hmac.Equal([]byte(r.URL.Query().Get("sig")), []byte(sig)) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="module server"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return false
}

// sign is the signature of a tree location: an HMAC of its module made
// with the token.
func (h *handler) sign(m Module) string {
	mac := hmac.New(sha256.New, []byte(h.cfg.token))
	mac.Write([]byte("modserve tree " + m.path()))
	return hex.EncodeToString(mac.Sum(nil))
}

// module is the request's module, version when the path has one.
func module(r *http.Request, ver string) (Module, error) {
	m := Module{Host: strings.ToLower(r.PathValue("host")), Namespace: r.PathValue("ns"), Name: r.PathValue("name"), System: r.PathValue("system"), Version: ver}
	if ver == "" {
		m.Version = "0.0.0" // only the address is checked
	}
	if err := m.validate(); err != nil {
		return Module{}, err
	}
	m.Version = ver
	return m, nil
}

// allowed refuses a host WithHosts leaves out, as not offered.
func (h *handler) allowed(host string) error {
	if h.cfg.hosts != nil && !h.cfg.hosts[strings.ToLower(host)] {
		return &httpError{http.StatusNotFound, fmt.Errorf("%w: this server does not serve modules from %s", ErrNotFound, host)}
	}
	return nil
}

func (h *handler) versions(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r, "") {
		return
	}
	m, err := module(r, "")
	if err == nil {
		err = h.allowed(m.Host)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.up.versions(r.Context(), m)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type ver struct {
		Version string `json:"version"`
	}
	out := make([]ver, 0, len(vs))
	for _, v := range vs {
		out = append(out, ver{v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"modules": []any{map[string]any{"versions": out}}})
}

func (h *handler) download(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r, "") {
		return
	}
	m, err := module(r, r.PathValue("version"))
	if err == nil {
		err = h.allowed(m.Host)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sum, err := h.archiveSum(r, m)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// From .../modules.v1/HOST/NS/NAME/SYSTEM/VERSION/download up to the
	// handler's root: six levels.
	loc := strings.Repeat("../", 6) + "v1/tree/" + m.path() + ".tar.gz?checksum=sha256:" + sum
	if h.cfg.token != "" {
		loc += "&sig=" + h.sign(m)
	}
	w.Header().Set("X-Terraform-Get", loc)
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) tree(w http.ResponseWriter, r *http.Request) {
	ver, ok := strings.CutSuffix(r.PathValue("file"), ".tar.gz")
	m, err := module(r, ver)
	if err == nil {
		err = h.allowed(m.Host)
	}
	if !ok || err != nil {
		if err == nil {
			err = &httpError{http.StatusNotFound, fmt.Errorf("no such tree %q: want VERSION.tar.gz", r.URL.Path)}
		}
		if h.authorized(w, r, "") {
			h.fail(w, r, err)
		}
		return
	}
	if !h.authorized(w, r, h.sign(m)) {
		return
	}
	dir, rec, err := h.entry(r, m)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Packed into memory first: a file that fails its check must cut the
	// answer before its status is sent, and modules are small (bounded
	// by WithMaxSize when they were unpacked).
	var buf bytes.Buffer
	if _, err := pack(&buf, dir, rec); err != nil {
		h.fail(w, r, fmt.Errorf("%s: %w", m, err))
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, &buf)
}

// entry returns the stored tree of m and its record, filling it from
// upstream when the store lacks it.
func (h *handler) entry(r *http.Request, m Module) (string, treesum.Tree, error) {
	// A fill outlives the request that asked for it (the next one would
	// only start it again), within its own bound.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.cfg.fillTimeout)
	defer cancel()
	key := m.storeKey()
	dir, filled, err := h.s.Get(ctx, key, func(ctx context.Context, dir string) error {
		h.cfg.log.Info("fetching a module from its registry", "module", m.String())
		return h.up.fetch(ctx, m, dir)
	})
	if err != nil {
		return "", nil, err
	}
	if filled {
		h.cfg.log.Info("stored a module fetched from its registry", "module", m.String())
	}
	rec, err := h.s.Record(key)
	if err != nil {
		return "", nil, err
	}
	return dir, rec, nil
}

// archiveSum is the SHA-256 of m's tree archive, packed once per tree.
func (h *handler) archiveSum(r *http.Request, m Module) (string, error) {
	dir, rec, err := h.entry(r, m)
	if err != nil {
		return "", err
	}
	k := m.storeKey() + "\n" + rec.Digest()
	h.mu.Lock()
	sum, ok := h.sums[k]
	h.mu.Unlock()
	if ok {
		return sum, nil
	}
	if sum, err = pack(io.Discard, dir, rec); err != nil {
		return "", fmt.Errorf("%s: %w", m, err)
	}
	h.mu.Lock()
	h.sums[k] = sum
	h.mu.Unlock()
	return sum, nil
}
