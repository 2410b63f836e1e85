package pluginc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mirrorFixture is a mirror cache filled from the loopback registry and
// served over loopback HTTPS.
type mirrorFixture struct {
	reg   *registryFixture
	cache *Cache
	srv   *httptest.Server
	log   *syncBuffer
}

func startMirror(t *testing.T, reg *registryFixture, opts ...MirrorOption) *mirrorFixture {
	t.Helper()
	log := &syncBuffer{}
	c := reg.open(t, t.TempDir(), WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	srv := httptest.NewTLSServer(c.MirrorHandler(opts...))
	t.Cleanup(srv.Close)
	return &mirrorFixture{reg: reg, cache: c, srv: srv, log: log}
}

// URL is the mirror's base URL.
func (m *mirrorFixture) URL() string { return m.srv.URL + "/" }

// client opens a cache whose only source is the mirror.
func (m *mirrorFixture) client(t *testing.T, opts ...Option) *Cache {
	t.Helper()
	c, err := Open(t.TempDir(), append([]Option{WithSource(NetworkMirror(m.URL())), WithHTTPClient(m.srv.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

func (m *mirrorFixture) get(t *testing.T, path string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, m.srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := m.srv.Client().Do(req)
	require.NoError(t, err, "GET %s", path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "GET %s", path)
	return resp.StatusCode, b
}

func providerPath(file string) string {
	return "/" + testprovider.Host + "/" + testprovider.Namespace + "/" + testprovider.Type + "/" + file
}

// TestMirrorServesCache: two caches whose only source is the mirror get
// the package the registry serves (same h1:) with one upstream download
// between them; the archive is the same bytes every time and hashes to
// the entry's h1:; a lock file from a direct install verifies against the
// mirror's package and comes back identical.
func TestMirrorServesCache(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	m := startMirror(t, reg)
	ctx := context.Background()
	req := Requirement{Provider: reg.p, Constraints: "~> 1.0"}
	want, err := dirhash.HashZip(reg.zips["1.1.0"], dirhash.Hash1)
	require.NoError(t, err)

	var locks [][]byte
	for range 2 {
		pkgs, err := m.client(t).Ensure(ctx, req)
		require.NoError(t, err)
		require.Len(t, pkgs, 1)
		require.Equal(t, "1.1.0", pkgs[0].Version)
		h1, err := hashDir(pkgs[0].Dir)
		require.NoError(t, err)
		require.Equal(t, want, h1, "the mirror's package is the registry's")
		locks = append(locks, LockFile(pkgs))
	}
	require.Equal(t, string(locks[0]), string(locks[1]))
	require.Contains(t, string(locks[0]), want)
	require.Equal(t, 1, reg.srv.Downloads(reg.key("1.1.0")), "one upstream download for every client")
	require.Equal(t, 1, reg.srv.TotalDownloads())

	status, idx := m.get(t, providerPath("index.json"))
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"versions":{"1.0.0":{},"1.1.0":{}}}`, string(idx))
	status, doc := m.get(t, providerPath("1.1.0.json"))
	require.Equal(t, http.StatusOK, status)
	direct := reg.open(t, t.TempDir())
	dpkgs, err := direct.Ensure(ctx, req)
	require.NoError(t, err)
	require.Contains(t, string(doc), `"url":"terraform-provider-`+testprovider.Type+`_1.1.0_`+testprovider.Platform+`.zip"`)
	for _, h := range dpkgs[0].Hashes {
		require.Contains(t, string(doc), h, "the mirror lists every hash recorded at install")
	}

	// Deterministic: the same bytes twice, hashing to the entry's h1:.
	zipPath := providerPath("terraform-provider-" + testprovider.Type + "_1.1.0_" + testprovider.Platform + ".zip")
	status, z1 := m.get(t, zipPath)
	require.Equal(t, http.StatusOK, status)
	_, z2 := m.get(t, zipPath)
	require.Equal(t, z1, z2)
	zf := filepath.Join(t.TempDir(), "p.zip")
	require.NoError(t, os.WriteFile(zf, z1, 0o600))
	h1, err := dirhash.HashZip(zf, dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, want, h1)

	// A lock file from a direct install (h1: and the signed zh: of every
	// platform) is kept whole by a client of the mirror.
	dlock := LockFile(dpkgs)
	parsed, err := ParseLockFile(dlock)
	require.NoError(t, err)
	lreq := parsed[0].Requirement()
	lreq.Constraints = "~> 1.0"
	pkgs, err := m.client(t).Ensure(ctx, lreq)
	require.NoError(t, err)
	require.Equal(t, string(dlock), string(LockFile(pkgs)), "a mirror client's lock file is the direct install's")
	require.Equal(t, 2, reg.srv.TotalDownloads(), "the mirror's and the direct install's")
}

// TestMirrorBadRequests: every malformed or unknown request gets its
// 4xx with a message, and nothing is fetched for it.
func TestMirrorBadRequests(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0"})
	m := startMirror(t, reg)
	zip := func(v, plat string) string {
		return providerPath("terraform-provider-" + testprovider.Type + "_" + v + "_" + plat + ".zip")
	}
	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/", 400, "want /HOSTNAME/NAMESPACE/TYPE/FILE"},
		{"/" + testprovider.Host + "/" + testprovider.Namespace + "/index.json", 400, "want /HOSTNAME"},
		{"/" + testprovider.Host + "/../" + testprovider.Type + "/index.json", 400, ".."},
		{"/" + testprovider.Host + "/%2e%2e/" + testprovider.Type + "/index.json", 400, ".."},
		{"/" + testprovider.Host + "/a%2Fb/" + testprovider.Type + "/index.json", 400, "want /HOSTNAME"},
		{"/" + testprovider.Host + "/bad_ns!/" + testprovider.Type + "/index.json", 400, "bad_ns!"},
		{"/" + testprovider.Host + "/" + testprovider.Namespace + "/nosuch/index.json", 404, "nosuch"},
		{providerPath("2.0.0.json"), 404, "version 2.0.0"},
		{providerPath("1.0.json"), 400, `bad version "1.0"`},
		{providerPath("..json"), 400, "bad version"},
		{providerPath("other.txt"), 404, "no such mirror file"},
		{zip("1.0.0", otherPlatform()), 404, "platform \"" + otherPlatform() + "\" is not served"},
		{zip("3.0.0", testprovider.Platform), 404, "version 3.0.0"},
		{zip("1.0.0", "linux"), 400, "bad archive name"},
		{providerPath("terraform-provider-other_1.0.0_" + testprovider.Platform + ".zip"), 404, "no such archive"},
	} {
		status, body := m.get(t, tc.path)
		require.Equal(t, tc.status, status, "%s: %s", tc.path, body)
		require.Contains(t, string(body), tc.msg, tc.path)
	}
	req, err := http.NewRequest(http.MethodPost, m.srv.URL+providerPath("index.json"), nil)
	require.NoError(t, err)
	resp, err := m.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, 0, reg.srv.TotalDownloads(), "nothing was downloaded for a bad request")
}

// TestMirrorToken: with WithMirrorToken, requests without the token (or
// with another) get 401, clients with TF_TOKEN_<host> install, and the
// token is in no log record.
func TestMirrorToken(t *testing.T) {
	const tok = "fleet-s3cret"
	reg := startRegistry(t, 0, []string{"1.0.0"})
	m := startMirror(t, reg, WithMirrorToken(tok))
	status, _ := m.get(t, providerPath("index.json"))
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = m.get(t, providerPath("index.json"), "Authorization", "Bearer wrong-"+tok)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = m.get(t, providerPath("index.json"), "Authorization", "Bearer "+tok)
	require.Equal(t, http.StatusOK, status)

	log := &syncBuffer{}
	_, err := m.client(t, WithLogger(slog.New(slog.NewTextHandler(log, nil)))).Ensure(context.Background(), Requirement{Provider: reg.p})
	require.ErrorIs(t, err, ErrDownload)
	require.Contains(t, err.Error(), "401")
	host := strings.TrimPrefix(m.srv.URL, "https://")
	pkgs, err := m.client(t, WithLookupEnv(tokenEnv(host)), WithLogger(slog.New(slog.NewTextHandler(log, nil)))).
		Ensure(context.Background(), Requirement{Provider: reg.p})
	require.Error(t, err, "tokenEnv's token is not the mirror's")
	require.Nil(t, pkgs)
	c := m.client(t, WithLookupEnv(func(k string) (string, bool) {
		if k == "TF_TOKEN_"+strings.NewReplacer("-", "__", ".", "_").Replace(host) {
			return tok, true
		}
		return "", false
	}), WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	pkgs, err = c.Ensure(context.Background(), Requirement{Provider: reg.p})
	require.NoError(t, err)
	require.Equal(t, "1.0.0", pkgs[0].Version)
	require.NotContains(t, m.log.String()+log.String(), tok)
}

// TestMirrorDownFallsBack: a client whose mirror does not answer installs
// from its next source and says so in its log; with no other source, the
// error names the mirror.
func TestMirrorDownFallsBack(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0"})
	m := startMirror(t, reg)
	down := m.URL()
	m.srv.Close()
	ctx := context.Background()
	req := Requirement{Provider: reg.p}
	hc, err := fleetClient(reg.srv.Host(), reg.srv.Addr(), reg.srv.CAPEM())
	require.NoError(t, err)
	fast := []Option{WithHTTPClient(hc), WithRetries(1), WithRetryWait(time.Millisecond, time.Millisecond)}

	log := &syncBuffer{}
	c, err := Open(t.TempDir(), append(fast, WithSource(NetworkMirror(down), Registry()), WithLogger(slog.New(slog.NewTextHandler(log, nil))))...)
	require.NoError(t, err)
	pkgs, err := c.Ensure(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "1.0.0", pkgs[0].Version)
	require.Contains(t, log.String(), "source failed to list versions")
	require.Contains(t, log.String(), "network mirror "+down)

	c, err = Open(t.TempDir(), append(fast, WithSource(NetworkMirror(down)))...)
	require.NoError(t, err)
	_, err = c.Ensure(ctx, req)
	require.ErrorIs(t, err, ErrDownload)
	require.Contains(t, err.Error(), "network mirror "+down)
	requireEmptyCache(t, c)
}

// fleetClient is an HTTP client for a machine of the fleet: it trusts
// the PEMs given (the registry's CA, the mirror's certificate), reaches
// the registry's host name at its loopback address, and dials loopback
// addresses as they are, so a mirror that is down is really down.
func fleetClient(regHost, regAddr string, pems ...[]byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	for _, pem := range pems {
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %q", pem)
		}
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, _, err := net.SplitHostPort(addr)
			switch {
			case err != nil:
				return nil, err
			case h == regHost:
				addr = regAddr
			case h != "127.0.0.1":
				return nil, fmt.Errorf("refusing to dial %s: not loopback", addr)
			}
			return d.DialContext(ctx, network, addr)
		},
	}}, nil
}

// TestPackEntryRefusesChangedFile: a file that is not what the record
// says fails the archive.
func TestPackEntryRefusesChangedFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("verified"), 0o755))
	rec, err := treesum.Record(dir)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, packEntry(&buf, dir, rec))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("tampered"), 0o755))
	err = packEntry(io.Discard, dir, rec)
	require.ErrorIs(t, err, ErrDamagedEntry)
	require.Contains(t, err.Error(), filepath.Join(dir, "a"))
}

// TestMirrorRefreshesVersions: a version the upstream publishes after
// the mirror listed the provider is offered once the listing is older
// than WithMirrorRefresh, and installable; before that it is not.
func TestMirrorRefreshesVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		want    string
	}{
		{"kept", time.Hour, `{"versions":{"1.0.0":{}}}`},
		{"refreshed", time.Nanosecond, `{"versions":{"1.0.0":{},"1.1.0":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := startRegistry(t, 0, []string{"1.0.0"})
			m := startMirror(t, reg, WithMirrorRefresh(tc.refresh))
			status, idx := m.get(t, providerPath("index.json"))
			require.Equal(t, http.StatusOK, status)
			require.JSONEq(t, `{"versions":{"1.0.0":{}}}`, string(idx))
			require.NoError(t, reg.srv.AddFile(testprovider.Namespace, testprovider.Type, "1.1.0", testprovider.Platform, reg.zips["1.0.0"]))
			status, idx = m.get(t, providerPath("index.json"))
			require.Equal(t, http.StatusOK, status)
			require.JSONEq(t, tc.want, string(idx))
			status, _ = m.get(t, providerPath("1.1.0.json"))
			if tc.refresh == time.Hour {
				require.Equal(t, http.StatusNotFound, status)
				return
			}
			require.Equal(t, http.StatusOK, status)
			pkgs, err := m.client(t).Ensure(context.Background(), Requirement{Provider: reg.p})
			require.NoError(t, err)
			require.Equal(t, "1.1.0", pkgs[0].Version)
		})
	}
}

// TestMirrorPlatforms: a mirror serving several platforms lists an
// archive for each one the upstream has, leaves out one it lacks, and
// serves each platform's own package.
func TestMirrorPlatforms(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0"})
	log := &syncBuffer{}
	c := reg.open(t, t.TempDir(), WithLogger(slog.New(slog.NewTextHandler(log, nil))),
		WithPlatforms(testprovider.Platform, otherPlatform(), "netbsd_arm"))
	srv := httptest.NewTLSServer(c.MirrorHandler())
	t.Cleanup(srv.Close)
	m := &mirrorFixture{reg: reg, cache: c, srv: srv, log: log}
	status, doc := m.get(t, providerPath("1.0.0.json"))
	require.Equal(t, http.StatusOK, status, string(doc))
	var got struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	require.NoError(t, json.Unmarshal(doc, &got))
	require.Len(t, got.Archives, 2)
	require.NotContains(t, got.Archives, "netbsd_arm")
	other := got.Archives[otherPlatform()]
	status, z := m.get(t, providerPath(other.URL))
	require.Equal(t, http.StatusOK, status)
	zf := filepath.Join(t.TempDir(), "other.zip")
	require.NoError(t, os.WriteFile(zf, z, 0o600))
	h1, err := dirhash.HashZip(zf, dirhash.Hash1)
	require.NoError(t, err)
	require.Contains(t, other.Hashes, h1, "the stand-in package of the other platform")
	require.NotContains(t, got.Archives[testprovider.Platform].Hashes, h1)
	status, body := m.get(t, providerPath("terraform-provider-"+testprovider.Type+"_1.0.0_netbsd_arm.zip"))
	require.Equal(t, http.StatusNotFound, status, string(body))
}

// TestMirrorUpstreamFailure: an upstream that refuses the mirror is a 502
// naming the failure, logged by the mirror.
func TestMirrorUpstreamFailure(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0"}, testregistry.WithToken("the-mirror-lacks-it"))
	m := startMirror(t, reg)
	status, body := m.get(t, providerPath("index.json"))
	require.Equal(t, http.StatusBadGateway, status)
	require.Contains(t, string(body), "401")
	require.Contains(t, m.log.String(), "provider mirror request failed")
	require.Contains(t, m.log.String(), "status=502")
}

// FuzzMirrorPath: no request path makes the handler panic or answer
// anything but a 4xx (the mirror's sources offer nothing, so nothing is
// found).
func FuzzMirrorPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b/c/index.json", "/a/b/c/1.0.0.json", "/../../etc/passwd", "/a/b/c/terraform-provider-c_1.0.0_linux_amd64.zip",
		"/a/b/c/terraform-provider-c___.zip", "/a/b/c/terraform-provider-c_1.0.0__.zip", "/a//c/index.json", "/A/B/C/INDEX.JSON", "/a/b/c/.json", "/xn--/b/c/index.json"} {
		f.Add(s)
	}
	c, err := Open(f.TempDir(), WithSource(FilesystemMirror(f.TempDir())), WithPlatforms("linux_amd64", "darwin_arm64"))
	require.NoError(f, err)
	h := c.MirrorHandler()
	f.Fuzz(func(t *testing.T, path string) {
		r := httptest.NewRequest(http.MethodGet, "https://mirror.test/", nil)
		r.URL.Path = path
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.GreaterOrEqual(t, w.Code, 400, "%q: %s", path, w.Body)
		require.Less(t, w.Code, 500, "%q: %s", path, w.Body)
	})
}

// TestMirrorSharedCache: a mirror on a cache shared with a group
// (WithSharedGroup) serves an entry another process installed only once
// it has verified it against the upstream itself, as Ensure would.
func TestMirrorSharedCache(t *testing.T) {
	reg := startRegistry(t, 0, []string{"1.0.0"})
	dir := filepath.Join(t.TempDir(), "shared")
	want, err := dirhash.HashZip(reg.zips["1.0.0"], dirhash.Hash1)
	require.NoError(t, err)
	for i := range 2 { // the second Cache stands for another process on the same dir
		c := reg.open(t, dir, WithSharedGroup(os.Getegid()))
		srv := httptest.NewTLSServer(c.MirrorHandler())
		t.Cleanup(srv.Close)
		m := &mirrorFixture{reg: reg, cache: c, srv: srv, log: &syncBuffer{}}
		pkgs, err := m.client(t).Ensure(context.Background(), Requirement{Provider: reg.p})
		require.NoError(t, err)
		h1, err := hashDir(pkgs[0].Dir)
		require.NoError(t, err)
		require.Equal(t, want, h1)
		require.Equal(t, int64(i), c.Stats().Verifies, "the entry of another process is verified before it is served")
		require.Equal(t, i+1, reg.srv.Downloads(reg.key("1.0.0")))
	}
}

// TestMirrorClientWaitsForTheFill: a mirror that does not hold the
// package yet answers VERSION.json only once its own upstream download
// is done, which may take longer than the metadata timeout of a small
// document; the client waits for it (under the header and request
// timeouts) instead of giving up, with no retry to hide it.
func TestMirrorClientWaitsForTheFill(t *testing.T) {
	const meta = 100 * time.Millisecond
	reg := startRegistry(t, 0, []string{"1.0.0"})
	m := startMirror(t, reg)
	gate := reg.srv.Hold() // the mirror's upstream download
	c := m.client(t, WithMetadataTimeout(meta), WithRetries(0))
	type result struct {
		pkgs []Package
		err  error
	}
	done := make(chan result, 1)
	go func() {
		pkgs, err := c.Ensure(context.Background(), Requirement{Provider: reg.p})
		done <- result{pkgs, err}
	}()
	<-gate.Started()
	// Not a synchronisation: the fill must outlast the metadata timeout
	// before it may go on.
	held := time.NewTimer(3 * meta)
	select {
	case <-held.C:
	case r := <-done:
		t.Fatalf("the client ended while the mirror's fill was held: %v", r.err)
	}
	gate.Release()
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, "1.0.0", r.pkgs[0].Version)
	require.Equal(t, 1, reg.srv.TotalDownloads(), "one upstream download")
	require.Zero(t, c.Stats().Retries)
}
