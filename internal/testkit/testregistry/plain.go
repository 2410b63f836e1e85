package testregistry

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Plain HTTP, for tests of where credentials go: the same routes served
// over plain HTTP, absolute archive URLs, redirects of downloads, and a
// record of every request that carried an Authorization header.

// PlainHTTP starts (once) a plain HTTP listener on loopback serving the
// same routes, and returns its base as clients see it: http://HOST/.
// HTTPClient sends connections for port 80 there, so a URL such as
// http://HOST/dl/... reaches it as it would reach a real host's port 80.
func (s *Server) PlainHTTP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain == nil {
		s.plain = httptest.NewServer(s.routes())
	}
	return "http://" + s.host + "/"
}

// plainAddr is the plain listener's "ip:port", or "" when not started.
func (s *Server) plainAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain == nil {
		return ""
	}
	return s.plain.Listener.Addr().String()
}

// SetArchiveBase makes later download documents (the registry's
// download_url, shasums_url and shasums_signature_url, the network
// mirror's archive url) absolute URLs under base, such as PlainHTTP's;
// "" makes them relative again.
func (s *Server) SetArchiveBase(base string) {
	s.mu.Lock()
	s.archiveBase = strings.TrimSuffix(base, "/")
	s.mu.Unlock()
}

// archiveURL is the URL a download document gives for path (which starts
// with "/").
func (s *Server) archiveURL(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.archiveBase + path
}

// RedirectDownloads makes every later HTTPS request for a file under
// /dl/ answer 302 Found to the same path under base (such as
// PlainHTTP's); "" stops it.
func (s *Server) RedirectDownloads(base string) {
	s.mu.Lock()
	s.redirectBase = strings.TrimSuffix(base, "/")
	s.mu.Unlock()
}

// redirect answers r with a redirect when RedirectDownloads says so.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	base := s.redirectBase
	s.mu.Unlock()
	if base == "" || r.TLS == nil {
		return false
	}
	http.Redirect(w, r, base+r.URL.Path, http.StatusFound)
	return true
}

// AuthorizedRequests returns "SCHEME://HOST/PATH" of every request so far
// that carried an Authorization header, in the order they arrived, plain
// HTTP ones included.
func (s *Server) AuthorizedRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.authSeen...)
}

// recordAuth notes r if it carried an Authorization header.
func (s *Server) recordAuth(r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	s.mu.Lock()
	s.authSeen = append(s.authSeen, scheme+"://"+r.Host+r.URL.Path)
	s.mu.Unlock()
}

// dialAddr is where a client of this server connects for addr: the plain
// listener for port 80 once PlainHTTP started it, else the TLS listener.
func (s *Server) dialAddr(addr string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "80" {
		if p := s.plainAddr(); p != "" {
			return p
		}
	}
	return s.Addr()
}
