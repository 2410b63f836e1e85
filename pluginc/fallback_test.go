package pluginc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestMirrorFallback (issue 36 item 8): with the fleet set-up (a network
// mirror, then the registry), a mirror that is stopped, answers 500, or
// lists the version and fails to deliver it, is fallen back from, and
// the Ensure call is told (WithFallback): once, naming the mirror by its
// URL without the credentials and query it was given, how it failed and
// the source that served the package. The package is installed from the
// registry. A later Ensure that finds the package in the cache is told
// nothing.
func TestMirrorFallback(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	broken := func(t *testing.T, h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewTLSServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	for _, tc := range []struct {
		name    string
		mirror  func(t *testing.T) *httptest.Server
		listing bool
		err     string // in Fallback.Err
	}{
		{name: "stopped", listing: true, err: "connection refused", mirror: func(t *testing.T) *httptest.Server {
			srv := broken(t, http.NotFound)
			srv.Close()
			return srv
		}},
		{name: "answering 500", listing: true, err: "500", mirror: func(t *testing.T) *httptest.Server {
			return broken(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
		}},
		{name: "failing the download", listing: false, err: "500", mirror: func(t *testing.T) *httptest.Server {
			return broken(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/index.json") {
					_, _ = w.Write([]byte(`{"versions": {"1.0.0": {}}}`))
					return
				}
				http.Error(w, "down", http.StatusInternalServerError)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mirror(t)
			host := strings.TrimPrefix(m.URL, "https://")
			mirrorURL := "https://fleet:hunter2@" + host + "/?token=hunter3"
			c, err := Open(t.TempDir(), WithSource(NetworkMirror(mirrorURL), Registry()),
				WithHTTPClient(f.srv.HTTPClientAlso(m)), WithRetries(0))
			require.NoError(t, err)

			before := f.srv.Downloads(f.key("1.0.0"))
			var mu sync.Mutex
			var got []Fallback
			ctx := WithFallback(context.Background(), func(fb Fallback) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fb)
			})
			pkgs, err := c.Ensure(ctx, Requirement{Provider: f.p})
			require.NoError(t, err, "the registry serves what the mirror does not")
			require.Equal(t, "1.0.0", pkgs[0].Version)
			require.Equal(t, before+1, f.srv.Downloads(f.key("1.0.0")), "one download, from the registry")

			require.Len(t, got, 1)
			fb := got[0]
			require.Equal(t, PackageID{Provider: f.p, Version: "1.0.0", Platform: testprovider.Platform}, fb.Package)
			require.Equal(t, "network mirror https://"+host+"/", fb.Source, "the mirror by its URL, no credentials or query")
			require.Equal(t, "provider registry", fb.Used)
			require.Equal(t, tc.listing, fb.Listing)
			require.Contains(t, fb.Err, tc.err)
			s := fb.String()
			require.Contains(t, s, "network mirror https://"+host+"/")
			require.Contains(t, s, "installed from provider registry")
			require.NotContains(t, s, "hunter", "no credentials or query from the mirror URL")

			got = nil
			_, err = c.Ensure(ctx, Requirement{Provider: f.p})
			require.NoError(t, err)
			require.Empty(t, got, "a package in the cache fell back from nothing")
		})
	}
}

// TestScrubURLs: credentials, query and fragment of every URL in a
// message are dropped; the rest of the message is kept.
func TestScrubURLs(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://u:p@m.example:8443/x/index.json?token=s#f": dial tcp: connection refused`: `Get "https://m.example:8443/x/index.json": dial tcp: connection refused`,
		"no url here": "no url here",
		"https://m.example/a and http://u@h/b?q=1":       "https://m.example/a and http://h/b",
		"network mirror https://m.example:8443/":         "network mirror https://m.example:8443/",
		"list versions of x from https://m.example/?k=v": "list versions of x from https://m.example/",
	} {
		require.Equal(t, want, scrubURLs(in), in)
	}
}
