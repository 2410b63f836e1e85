package pluginc

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// tokenEnv gives the test registry's host the token s3cret, as a
// TF_TOKEN_ variable would.
func tokenEnv(host string) func(string) (string, bool) {
	name := "TF_TOKEN_" + strings.NewReplacer("-", "__", ".", "_").Replace(host)
	return func(k string) (string, bool) { return "s3cret", k == name }
}

// requireNoPlainCredentials checks that the server saw the token, and
// only over https.
func requireNoPlainCredentials(t *testing.T, srv *testregistry.Server) {
	t.Helper()
	seen := srv.AuthorizedRequests()
	require.NotEmpty(t, seen, "the token was never sent: the test proves nothing")
	for _, r := range seen {
		require.True(t, strings.HasPrefix(r, "https://"), "credentials sent in clear text: %s (all: %q)", r, seen)
	}
}

// TestCredentialsOnlyOverHTTPS (issue 22 item 10) serves the test
// provider on real loopback HTTPS plus a plain HTTP listener on the same
// host (port 80), and checks that the host's token never travels in
// clear text: not to a network mirror's archive URL on http://HOST/, not
// to a registry's download URLs there, and not through a redirect of the
// mirror's own https download to http, which the cache refuses.
func TestCredentialsOnlyOverHTTPS(t *testing.T) {
	t.Run("mirror archive on http", func(t *testing.T) {
		f := startRegistry(t, 0, []string{"1.0.0"})
		f.srv.SetArchiveBase(f.srv.PlainHTTP())
		c, err := Open(t.TempDir(), WithSource(NetworkMirror(f.srv.MirrorURL())), WithHTTPClient(f.srv.HTTPClient()),
			WithLookupEnv(tokenEnv(f.srv.Host())))
		require.NoError(t, err)
		// The archive itself is checked against the hashes of the mirror's
		// https document; only the token stays home.
		_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
		require.NoError(t, err)
		requireNoPlainCredentials(t, f.srv)
	})
	t.Run("registry downloads on http", func(t *testing.T) {
		f := startRegistry(t, 0, []string{"1.0.0"}, testregistry.WithToken("s3cret"))
		f.srv.SetArchiveBase(f.srv.PlainHTTP())
		c := f.open(t, t.TempDir(), WithLookupEnv(tokenEnv(f.srv.Host())))
		_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
		require.NoError(t, err, "the package is checked against the signed SHA256SUMS")
		requireNoPlainCredentials(t, f.srv)
	})
	t.Run("redirect from https to http", func(t *testing.T) {
		f := startRegistry(t, 0, []string{"1.0.0"})
		plain := f.srv.PlainHTTP()
		f.srv.RedirectDownloads(plain)
		before := f.srv.Requests()
		c, err := Open(t.TempDir(), WithSource(NetworkMirror(f.srv.MirrorURL())), WithHTTPClient(f.srv.HTTPClient()),
			WithLookupEnv(tokenEnv(f.srv.Host())), WithRetries(3))
		require.NoError(t, err)
		_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
		require.ErrorIs(t, err, ErrDownload)
		require.ErrorContains(t, err, "redirect from https to http")
		require.NotContains(t, err.Error(), "gave up after", "a refused redirect is not retried")
		requireNoPlainCredentials(t, f.srv)
		requireEmptyCache(t, c)
		// index.json, VERSION.json and one refused download: nothing
		// reached the plain listener.
		require.Equal(t, int64(3), f.srv.Requests()-before)
	})
}

// TestRedirectKeepsCredentialsAtTheirOrigin: the cache's redirect policy
// drops the Authorization header on a redirect to another scheme, host
// or port (Go's client keeps it for the same host name on any port),
// refuses https to http, and still ends at the caller's own policy.
func TestRedirectKeepsCredentialsAtTheirOrigin(t *testing.T) {
	req := func(raw string) *http.Request {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		r := &http.Request{URL: u, Header: http.Header{}}
		r.Header.Set("Authorization", "Bearer s3cret")
		return r
	}
	first := req("https://mirror.example:443/a")
	policy := safeRedirect(nil)
	for _, tt := range []struct {
		to       string
		keepAuth bool
	}{
		{"https://mirror.example/b", true},
		{"https://mirror.example:443/b", true},
		{"https://MIRROR.example/b", true},
		{"https://mirror.example:8443/b", false},
		{"https://other.example/b", false},
		{"https://sub.mirror.example/b", false},
	} {
		next := req(tt.to)
		require.NoError(t, policy(next, []*http.Request{first}), tt.to)
		require.Equal(t, tt.keepAuth, next.Header.Get("Authorization") != "", tt.to)
	}
	err := policy(req("http://mirror.example/b"), []*http.Request{first})
	require.ErrorContains(t, err, "redirect from https to http")
	err = policy(req("http://mirror.example/c"), []*http.Request{req("https://mirror.example/a"), req("https://mirror.example/b")})
	require.ErrorContains(t, err, "redirect from https to http")

	via := make([]*http.Request, 10)
	for i := range via {
		via[i] = req("https://mirror.example/a")
	}
	require.ErrorContains(t, policy(req("https://mirror.example/b"), via), "stopped after 10 redirects")

	called := false
	own := safeRedirect(func(*http.Request, []*http.Request) error { called = true; return http.ErrUseLastResponse })
	require.ErrorIs(t, own(req("https://mirror.example/b"), []*http.Request{first}), http.ErrUseLastResponse)
	require.True(t, called)
}
